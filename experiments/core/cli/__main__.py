"""``python -m crossdyn.experiments.core.cli``: the ``crossdyn`` command."""

from crossdyn.experiments.core.cli import console

console()
