"""``python -m experiments.cli ...``: the same as the ``searchbench`` script."""
import sys

from experiments.cli.main import main

sys.exit(main())
