"""The MuJoCo layer of crossdyn: cross-checks, closed loops, results, plots, the CLI.

The short API for scripts and notebooks::

    from crossdyn.experiments import load_model, check_derivation, run, experiment, Param

    report = check_derivation(my_inverse_dynamics, load_model("two_link_arm"))
    print(report.diagnosis)

    from crossdyn.experiments import check_jacobian
    report = check_jacobian("my_robot.py:foot_jacobian", "robot.xml", site="foot")   # kinematics, mass
    print(report.text("foot Jacobian"))        # matrix, bias, energy, forward dynamics, linearization alike

    from crossdyn.experiments import balance_recovery
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

# public name -> module that defines it
_API = {
    "load_model": "crossdyn.experiments.core.models",
    "with_options": "crossdyn.experiments.core.models",
    "check_derivation": "crossdyn.experiments.core.derivation",
    "tree_from_model": "crossdyn.experiments.core.derivation",
    "check_kinematics": "crossdyn.experiments.core.checks.kinematics",
    "check_jacobian": "crossdyn.experiments.core.checks.jacobian",
    "check_mass_matrix": "crossdyn.experiments.core.checks.mass_matrix",
    "check_bias": "crossdyn.experiments.core.checks.bias",
    "check_energy": "crossdyn.experiments.core.checks.energy",
    "check_forward_dynamics": "crossdyn.experiments.core.checks.forward_dynamics",
    "check_linearization": "crossdyn.experiments.core.checks.linearization",
    "CheckReport": "crossdyn.experiments.core.checks.report",
    "Report": "crossdyn.experiments.core.crosscheck",
    "run": "crossdyn.experiments.core.results",
    "Context": "crossdyn.experiments.core.results",
    "Outcome": "crossdyn.experiments.core.results",
    "experiment": "crossdyn.experiments.core.registry",
    "experiments": "crossdyn.experiments.core.registry",
    "Param": "crossdyn.experiments.core.registry",
    "Verdict": "crossdyn.experiments.core.registry",
    "CrossdynError": "crossdyn.experiments.core.errors",
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
    "Imperfections": "crossdyn.experiments.biped.imperfections",
    "REALISTIC": "crossdyn.experiments.biped.imperfections",
    "simulate": "crossdyn.experiments.core.loop",
    "simulate_batch": "crossdyn.experiments.core.batch",
    "Trace": "crossdyn.experiments.core.loop",
    "Observation": "crossdyn.experiments.core.loop",
    "ControllerError": "crossdyn.experiments.core.loop",
    "SensorNoise": "crossdyn.experiments.core.imperfections",
    "AttitudeFilter": "crossdyn.experiments.core.imperfections",
    "Quantization": "crossdyn.experiments.core.imperfections",
    "Delay": "crossdyn.experiments.core.imperfections",
    "ActuatorLag": "crossdyn.experiments.core.imperfections",
    "TorqueSpeedLimit": "crossdyn.experiments.core.imperfections",
    "Push": "crossdyn.experiments.core.imperfections",
    "MassScale": "crossdyn.experiments.core.imperfections",
    "InertiaScale": "crossdyn.experiments.core.imperfections",
    "FrictionScale": "crossdyn.experiments.core.imperfections",
    "plot_states": "crossdyn.experiments.biped.control",
    "Tolerance": "crossdyn.experiments.core.baseline",
    "tune": "crossdyn.experiments.core.sweep.experiment",
    "regulator": "crossdyn.experiments.core.regulator",
    "linearize": "crossdyn.experiments.core.linearize",
    "Linearization": "crossdyn.experiments.core.linearize",
    "holding_control": "crossdyn.experiments.core.linearize",
}

__all__ = sorted(_API)


def __getattr__(name: str):
    try:
        module = _API[name]
    except KeyError:
        raise AttributeError(f"module 'crossdyn.experiments' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
