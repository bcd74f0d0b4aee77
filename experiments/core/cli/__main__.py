"""``python -m crossdyn.experiments.core.cli``: the ``crossdyn`` command."""

from . import console

console()
