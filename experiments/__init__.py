"""The MuJoCo layer of crossdyn: cross-checks, closed loops, results, plots, the CLI.

Its generic API is the front door's, :mod:`crossdyn` (``import crossdyn``), and the
same names import from here::

    import crossdyn

    report = crossdyn.check_derivation(my_inverse_dynamics, crossdyn.load_model("two_link_arm"))
    print(report.diagnosis)
    report = crossdyn.check_jacobian("my_robot.py:foot_jacobian", "robot.xml", site="foot")
    print(report.text("foot Jacobian"))

One robot's names live in its own package::

    from crossdyn.experiments.biped import balance_recovery
    trace, metrics = balance_recovery(tilt_deg=12, weights={"q_theta": 300})

Layout: :mod:`.core` holds the machinery every system shares (models, ground
truth, the term-wise checker, the registry and runner, plots, the command line);
one module or subpackage per system holds its experiments: :mod:`.two_link`,
:mod:`.rnea`, :mod:`.unit_vector`, :mod:`.lagrange`, :mod:`.rigid_box`,
:mod:`.inertia` and the :mod:`.biped` subpackage.

Names are imported on first use, so ``import crossdyn.experiments`` (and the CLI's
start-up) stays cheap.
"""

from __future__ import annotations

import importlib
import warnings

from crossdyn import API as _FRONT_DOOR
from crossdyn import lazy_names

# public name -> module that defines it: the front door's names (``import crossdyn``).
_API = dict(_FRONT_DOOR)
# The registry's listing under its own module's name as well (at the front door it is
# ``crossdyn.registered``: there ``crossdyn.experiments`` is this package).
_API["experiments"] = "crossdyn.experiments.core.registry"

# The biped's names, once exported here beside the generic ones; they live in its own package now.
_MOVED = {name: "crossdyn.experiments.biped" for name in (
    "Setup", "balance_recovery", "velocity_tracking", "turn", "height_change", "roll_leveling", "push_recovery",
    "jump", "robustness", "lqr_cost", "Imperfections", "REALISTIC", "plot_states")}

__all__ = sorted(_API)


_lookup, __dir__ = lazy_names(__name__, _API, globals())


def __getattr__(name: str):
    if name in _MOVED:
        warnings.warn(f"crossdyn.experiments.{name} is the wheel-legged biped's: import it from {_MOVED[name]}",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(_MOVED[name]), name)
    return _lookup(name)
