"""``python -m crossdyn.experiments``: the ``crossdyn`` command, without the console script."""

import sys

from crossdyn.experiments.core.cli import main

sys.exit(main())
