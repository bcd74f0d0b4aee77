"""``python -m crossdyn.experiments``: the ``crossdyn`` command, without the console script."""

from .core.cli import console

console()
