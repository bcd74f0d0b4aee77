"""``python -m crossdyn.experiments.core.cli``: the ``crossdyn`` command."""

import sys

from crossdyn.experiments.core.cli import main

sys.exit(main())
