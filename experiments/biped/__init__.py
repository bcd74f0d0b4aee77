"""The wheel-legged biped: its model, controllers, scenarios, checks and tuning, as experiments.

The scenarios and their helpers for scripts::

    from crossdyn.experiments.biped import balance_recovery, REALISTIC, plot_states

    trace, metrics = balance_recovery(tilt_deg=12, weights={"q_theta": 300})

A scenario of your own, with your own controller, runs through
:func:`~crossdyn.experiments.biped.closed_loop.simulate_scenario` (its
:class:`~crossdyn.experiments.biped.closed_loop.ScenarioTrace` holds every control step).

Names are imported on first use.
"""

from __future__ import annotations

from crossdyn import lazy_names

_API = {name: f"crossdyn.experiments.biped.{module}" for module, names in (
    ("scenarios", ("Setup", "balance_recovery", "velocity_tracking", "turn", "height_change", "roll_leveling",
                   "push_recovery", "jump", "robustness", "lqr_cost")),
    ("closed_loop", ("Scenario", "ScenarioTrace", "simulate_scenario")),
    ("imperfections", ("Imperfections", "REALISTIC")),
    ("control", ("plot_states",)),
) for name in names}

__all__ = sorted(_API)


__getattr__, __dir__ = lazy_names(__name__, _API, globals())
