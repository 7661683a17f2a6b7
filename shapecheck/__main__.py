from shapecheck.cli import main

main()
