"""``python -m shapecheck``: the working directory was taken off ``sys.path`` by the package's ``__init__``
(which runs first), so files in it named like standard modules are never imported."""

from shapecheck.cli import main

main()
