"""Run the shapecheck CLI from a checkout: ``python cli.py report --heads 8 --d-model 512``."""

from shapecheck.cli import main

if __name__ == "__main__":
    main()
