"""crossdyn: MuJoCo as the ground truth for hand-derived robot dynamics and controllers.

The front door, as ``import control as ct`` is python-control's::

    import crossdyn as cd

    model = cd.load_model("two_link_arm")
    report = cd.check_derivation(my_inverse_dynamics, model)       # term by term against mj_inverse
    report = cd.check_mass_matrix("my_robot.py:mass_matrix", "robot.xml")
    lin = cd.linearize(model, keyframe="upright")                  # A, B for python-control
    trace = cd.simulate(model, controller, 4.0, imperfections=[cd.Delay(1)], seed=0)

    cart = cd.load_model("cart_pole")
    reg = cd.regulator(cart, Q=[1, 10, 1, 1], R=0.1, keyframe="upright", dt=0.002)  # LQR at the control rate
    trace = cd.simulate(cart, reg, 4.0, keyframe="upright", qpos=[0.0, 0.2])
    print(cd.compare_to_design(trace, reg))                        # the run's decay per mode beside its poles
    print(cd.measure_loop(cart, reg, keyframe="upright"))          # gain and phase margins measured in MuJoCo

    @cd.experiment("my-robot-balance", params={"q_angle": cd.Param(100.0, "weight on the angle")})
    def balance(ctx): ...

    cd.run("my-robot-balance", out="results")
    cd.tune("my-robot-balance", "results/tune", vary=["q_angle=1:1000:log"], minimize="settling_time_s")

Everything here is generic; nothing of one robot is (the biped's API lives in
:mod:`crossdyn.experiments.biped`, the two-link arm's in :mod:`crossdyn.experiments.two_link`).
The layers are the subpackages: :mod:`crossdyn.analytic` (hand-derived models),
:mod:`crossdyn.controllers` (control design and laws), :mod:`crossdyn.experiments`
(everything that runs MuJoCo), :mod:`crossdyn.mjcf` (the models) and
:mod:`crossdyn.testing` (the pytest plugin).  Names are imported on first use:
``import crossdyn`` loads neither MuJoCo nor NumPy.
"""

from __future__ import annotations

import importlib

# public name -> module that defines it; one meaning per name.  In the API page's order, by module.
API = {name: f"crossdyn.experiments.core.{module}" for module, names in (
    # models
    ("models", ("load_model", "with_options")),
    # checks of a derivation, one report type
    ("checks.derivation", ("check_derivation",)),
    ("checks.tree", ("tree_from_model",)),
    ("checks.kinematics", ("check_kinematics",)),
    ("checks.jacobian", ("check_jacobian",)),
    ("checks.mass_matrix", ("check_mass_matrix",)),
    ("checks.bias", ("check_bias",)),
    ("checks.energy", ("check_energy",)),
    ("checks.forward_dynamics", ("check_forward_dynamics",)),
    ("checks.linearization", ("check_linearization",)),
    ("reduction", ("Reduction",)),
    ("checks.report", ("CheckReport",)),
    ("checks.options", ("CheckOptions",)),
    # linearization and the regulator, designed at the control period in effect
    ("linearize", ("linearize", "Linearization", "holding_control")),
    ("regulator", ("regulator",)),
    ("loop.control_rate", ("control_period",)),
    # the closed loop
    ("loop.simulate", ("simulate",)),
    ("loop.trace", ("Trace", "Observation")),
    ("loop.batch", ("simulate_batch",)),
    # is the loop the design: the run's decay per mode, the margins measured in MuJoCo
    ("design_check", ("compare_to_design", "DesignComparison")),
    ("margins", ("measure_loop", "LoopMeasurement", "LoopDesign")),
    # is the MJCF the robot: a model against a robot's log
    ("identify.check_model", ("check_model", "register_model_check")),
    ("identify.record", ("record",)),
    # users' C controllers in the loop
    ("c_controller", ("CController", "CompileError")),
    # imperfections of the loop
    ("imperfections", ("SensorNoise", "AttitudeFilter", "Quantization", "Delay", "ActuatorLag", "TorqueSpeedLimit",
                       "Push", "MassScale", "InertiaScale", "FrictionScale")),
    # experiments: declare, run, judge, tune
    ("registry", ("experiment", "registered", "Param", "Verdict")),
    ("runner", ("run", "Context", "Outcome")),
    ("baseline", ("Tolerance",)),
    ("sweep.experiment", ("tune",)),
    ("sweep.engine", ("TuneEngine",)),
    # errors
    ("errors", ("CrossdynError", "ControllerError")),
) for name in names}

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


__getattr__, __dir__ = lazy_names(__name__, API, globals())
