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

_API = {
    "Setup": "crossdyn.experiments.biped.scenarios",
    "balance_recovery": "crossdyn.experiments.biped.scenarios",
    "velocity_tracking": "crossdyn.experiments.biped.scenarios",
    "turn": "crossdyn.experiments.biped.scenarios",
    "height_change": "crossdyn.experiments.biped.scenarios",
    "roll_leveling": "crossdyn.experiments.biped.scenarios",
    "push_recovery": "crossdyn.experiments.biped.scenarios",
    "jump": "crossdyn.experiments.biped.scenarios",
    "robustness": "crossdyn.experiments.biped.scenarios",
    "lqr_cost": "crossdyn.experiments.biped.scenarios",
    "Scenario": "crossdyn.experiments.biped.closed_loop",
    "ScenarioTrace": "crossdyn.experiments.biped.closed_loop",
    "simulate_scenario": "crossdyn.experiments.biped.closed_loop",
    "Imperfections": "crossdyn.experiments.biped.imperfections",
    "REALISTIC": "crossdyn.experiments.biped.imperfections",
    "plot_states": "crossdyn.experiments.biped.control",
}

__all__ = sorted(_API)


__getattr__, __dir__ = lazy_names(__name__, _API, globals())
