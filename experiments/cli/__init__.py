"""The ``searchbench`` command line: :mod:`experiments.cli.main` builds the parser from the command
modules beside it (harness, data, engines, search, bughouse) and runs one command."""
