"""``python -m searchbench ...``: the same as the ``searchbench`` command."""
import sys

from experiments.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
