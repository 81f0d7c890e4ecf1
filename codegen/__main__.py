"""``python -m codegen``: the same command line as the ``codegen`` console script."""

from codegen.orchestration.cli import run

run()
