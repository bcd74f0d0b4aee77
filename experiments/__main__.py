"""``python -m crossdyn.experiments``: the ``crossdyn`` command, without the console script."""

from crossdyn.experiments.core.cli import console

console()
