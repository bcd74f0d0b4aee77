"""crossdyn: MuJoCo as the ground truth for hand-derived robot dynamics and controllers.

The front door, as ``import control as ct`` is python-control's::

    import crossdyn as cd

    model = cd.load_model("two_link_arm")
    report = cd.check_derivation(my_inverse_dynamics, model)       # term by term against mj_inverse
    report = cd.check_mass_matrix("my_robot.py:mass_matrix", "robot.xml")
    lin = cd.linearize(model, keyframe="upright")                  # A, B for python-control
    trace = cd.simulate(model, controller, 4.0, imperfections=[cd.Delay(1)], seed=0)

    @cd.experiment("my-robot-balance", params={"q_angle": cd.Param(100.0, "weight on the angle")})
    def balance(ctx): ...

    cd.run("my-robot-balance", out="results")
    cd.tune("my-robot-balance", "results/tune", vary=["q_angle=1:1000:log"], minimize="settling_time_s")

Everything here is generic: models, every check of a derivation, linearization,
the LQR regulator, the closed loop and its imperfections, experiments, their
registry, running and tuning them.  Nothing of one robot is here: the wheel-legged
biped's scenarios, controllers and plots live in :mod:`crossdyn.experiments.biped`,
the two-link arm's in :mod:`crossdyn.experiments.two_link`, and so on.

The package's layers are its subpackages: :mod:`crossdyn.analytic` (hand-derived
models, NumPy/SciPy/SymPy only), :mod:`crossdyn.controllers` (control design and
laws), :mod:`crossdyn.experiments` (everything that runs MuJoCo), :mod:`crossdyn.mjcf`
(the models) and :mod:`crossdyn.testing` (the pytest plugin and its helpers).

Names are imported on first use: ``import crossdyn`` loads neither MuJoCo nor NumPy.
"""

from __future__ import annotations

import importlib

# public name -> module that defines it; one meaning per name.
API = {
    # models
    "load_model": "crossdyn.experiments.core.models",
    "with_options": "crossdyn.experiments.core.models",
    # checks of a derivation, one report type
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
    "Report": "crossdyn.experiments.core.crosscheck",  # the same class, by its older name
    "CheckOptions": "crossdyn.experiments.core.checks.options",
    # linearization and the regulator
    "linearize": "crossdyn.experiments.core.linearize",
    "Linearization": "crossdyn.experiments.core.linearize",
    "holding_control": "crossdyn.experiments.core.linearize",
    "regulator": "crossdyn.experiments.core.regulator",
    # the closed loop
    "simulate": "crossdyn.experiments.core.loop",
    "Trace": "crossdyn.experiments.core.loop",
    "Observation": "crossdyn.experiments.core.loop",
    "ControllerError": "crossdyn.experiments.core.loop",
    "simulate_batch": "crossdyn.experiments.core.batch",
    # is the MJCF the robot: a model against a robot's log
    "check_model": "crossdyn.experiments.core.identify.check_model",
    "model_matches_log": "crossdyn.experiments.core.identify.check_model",
    # users' C controllers in the loop
    "CController": "crossdyn.experiments.core.c_controller",
    "CompileError": "crossdyn.experiments.core.c_controller",
    # imperfections of the loop
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
    # experiments: declare, run, judge, tune
    "experiment": "crossdyn.experiments.core.registry",
    "registered": "crossdyn.experiments.core.registry",
    "Param": "crossdyn.experiments.core.registry",
    "Verdict": "crossdyn.experiments.core.registry",
    "run": "crossdyn.experiments.core.results",
    "Context": "crossdyn.experiments.core.results",
    "Outcome": "crossdyn.experiments.core.results",
    "Tolerance": "crossdyn.experiments.core.baseline",
    "tune": "crossdyn.experiments.core.sweep.experiment",
    "Tuning": "crossdyn.experiments.core.sweep.tuning",
    # errors
    "CrossdynError": "crossdyn.experiments.core.errors",
}

__all__ = sorted(API)


def lazy_names(module: str, table: dict[str, str], namespace: dict):
    """``(__getattr__, __dir__)`` for a module whose names in ``table`` (name -> defining module) load on first use.

    A name is imported from its module when first asked for and then kept in
    ``namespace`` (the module's globals), so later lookups never come back here.
    """

    def __getattr__(name: str):
        try:
            where = table[name]
        except KeyError:
            raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(where), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__


def renamed(module: str, table: dict[str, str], namespace: dict):
    """``__getattr__`` for a module whose public names in ``table`` (old name -> new name) were renamed.

    An old name still resolves, to the object under its new name in ``namespace`` (the
    module's globals), with a DeprecationWarning naming the new one; any other missing
    name is an AttributeError as usual.  The table stays readable as ``__getattr__.renamed``.
    """

    def __getattr__(name: str):
        if name not in table:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        import warnings

        warnings.warn(f"{module}.{name} is renamed: use {module}.{table[name]}", DeprecationWarning, stacklevel=2)
        return namespace[table[name]]

    __getattr__.renamed = dict(table)  # type: ignore[attr-defined]
    return __getattr__


__getattr__, __dir__ = lazy_names(__name__, API, globals())
