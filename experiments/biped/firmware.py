"""The biped's firmware in the loop: the C balance and leg controllers against the Python ones.

``controllers/biped/firmware/biped.c`` is the biped's controller as a microcontroller carries it
(single precision, the LQR gain table over leg length, fixed-size arrays, static state).
:func:`firmware` compiles it as a :class:`~crossdyn.experiments.core.c_controller.CController`
and :func:`flash` writes its parameter block from the model and a designed
:class:`~crossdyn.controllers.biped.controller.BipedController` (no number typed twice).  The
``biped-firmware`` experiment runs balance-recovery, push and turn with the Python
controller and the firmware built in double and in float, from the same state, and reports
how far each is from Python's (docs/guides/c-controllers.md explains the differences).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...analytic.biped import five_bar
from ...controllers import biped as biped_controllers
from ...controllers.biped.controller import BipedController, Reference
from ..core import figures
from ..core.c_controller import CController
from ..core.loop.simulate import simulate as run_loop
from ..core.loop.trace import Trace
from ..core.registry import Param, Verdict, experiment
from ..core.runner import Context
from . import closed_loop, scenarios
from .model import biped_params

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Wheel-legged biped: closed loops"
DERIVATION_PAGE = "biped-control"

__all__ = ["SOURCE", "firmware", "flash", "run_in_loop", "compare", "turn_scenario", "PITCH_TOL_DEG"]

SOURCE = Path(__file__).resolve().parents[2] / "controllers" / "biped" / "firmware" / "biped.c"
FLOAT_SIGNATURE = "int biped_step(float t, const float *sensors, float *command);"
DOUBLE_SIGNATURE = "int biped_step(double t, const double *sensors, double *command);"
# The firmware's pitch (and the yaw at the end of the turn) may leave Python's by this much, deg: the linear
# gain table against Python's cubic fit moves the pitch by ~1e-3 deg, while a sign or channel slip drops the robot.
PITCH_TOL_DEG = 0.05


def _source() -> Path:
    """The firmware's C source: beside the installed package, or in the repository."""
    installed = Path(biped_controllers.__file__).parent / "firmware" / "biped.c"
    return installed if installed.is_file() else SOURCE


def firmware(precision: str = "float") -> CController:
    """The firmware compiled in ``precision`` (``"float"``, as on the chip, or ``"double"``); not yet flashed."""
    signature = FLOAT_SIGNATURE if precision == "float" else DOUBLE_SIGNATURE
    return CController(_source(), "biped_step", inputs=("sensordata",), signature=signature,
                       defines={"real": precision})


def flash(c: CController, model, controller: BipedController, height: float, *, velocity: float = 0.0,
          yaw: float = 0.0, start: float = 0.0, stop: float = 1e30) -> CController:
    """Write the parameter block: channels from ``model``, numbers from ``controller``'s design, the reference.

    Args:
      height: leg height held, m.
      velocity, yaw: speed (m/s) and heading (rad) asked from ``start`` to ``stop`` (s); zero outside.
    """
    g, pend, geo = controller.gains, controller.params, controller.geometry
    sched = g.schedule
    c.params.update({
        "sensor_channel": list(closed_loop.Sensors(model).indices), "motor_channel": closed_loop.actuators(model),
        "l1": geo.l1, "l2": geo.l2, "l3": geo.l3, "wheel_radius": geo.r,
        "alpha_low": five_bar.REACHABLE[0], "alpha_high": five_bar.REACHABLE[1],
        "table_length": sched.lengths, "table_gain": sched.gains.reshape(len(sched.lengths), -1),
        "yaw_kp": g.yaw.kp, "yaw_kd": g.yaw.kd, "height_kp": g.legs.kp_height, "height_kd": g.legs.kd_height,
        "roll_kp": g.legs.kp_roll, "roll_kd": g.legs.kd_roll, "swing_kp": g.swing_kp, "swing_kd": g.swing_kd,
        "dt": controller.dt, "hip_limit": controller.hip_limit, "wheel_limit": controller.wheel_limit,
        "height_rate_limit": controller.height_rate_limit, "weight": pend.M * pend.g, "track": pend.D,
        "ref_velocity": velocity, "ref_yaw": yaw, "ref_height": height, "ref_start": start, "ref_stop": stop,
    })
    return c


def run_in_loop(model, sc: closed_loop.Scenario, controller) -> Trace:
    """One scenario in the generic loop with ``controller`` (a CController, or the Python BipedController)."""
    p = biped_params(model)
    n = int(round(sc.duration / sc.control_period))
    if isinstance(controller, BipedController):
        controller = closed_loop.plug(controller, p, sc, closed_loop.Sensors(model), closed_loop.actuators(model),
                                       n, True)
    return run_loop(model, controller, n * sc.control_period, qpos=closed_loop.initial_state(model, p, sc),
                    control_dt=sc.control_period, imperfections=closed_loop.pushes(sc), stop=closed_loop.Fall(model))


def _pitch_deg(model, trace: Trace) -> np.ndarray:
    adr = int(model.joint("root").qposadr[0]) + 3
    w, qx, qy, qz = trace.qpos[:, adr : adr + 4].T
    return np.degrees(np.arcsin(np.clip(2.0 * (w * qy - qz * qx), -1.0, 1.0)))


def _yaw_deg(model, trace: Trace) -> np.ndarray:
    adr = int(model.joint("root").qposadr[0]) + 3
    w, qx, qy, qz = trace.qpos[:, adr : adr + 4].T
    return np.degrees(np.unwrap(np.arctan2(2.0 * (w * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))))


def compare(model, a: Trace, b: Trace) -> dict:
    """How far run ``a`` is from run ``b``: max pitch and yaw differences (deg), max wheel torque difference (N m)."""
    n = min(a.t.size, b.t.size)
    wheels = [model.actuator(f"{s}_wheel").id for s in ("left", "right")]
    return {"pitch_deg": float(np.abs(_pitch_deg(model, a)[:n] - _pitch_deg(model, b)[:n]).max()),
            "yaw_deg": float(np.abs(_yaw_deg(model, a)[:n] - _yaw_deg(model, b)[:n]).max()),
            "wheel_torque_Nm": float(np.abs(a.ctrl[:n, wheels] - b.ctrl[:n, wheels]).max())}


def turn_scenario(turn_deg: float, duration: float, height: float, at: float = 0.5) -> closed_loop.Scenario:
    """The biped's turn: in place by ``turn_deg`` (positive: left) asked from ``at`` s, the height held."""
    target = np.radians(turn_deg)
    return closed_loop.Scenario(duration=duration, alpha0=scenarios.ALPHA_NOMINAL,
                                reference=lambda t: Reference(yaw=target if t >= at else 0.0, height=height),
                                control_period=scenarios.CONTROL_PERIOD)


@experiment(
    "biped-firmware",
    summary="the biped's C firmware (float, gain table) in the loop beside the Python controllers",
    expected=(f"float firmware balances, recovers and turns within {PITCH_TOL_DEG:g} deg of Python's pitch and "
              "final yaw"),
    params={"tilt_deg": Param(10.0, "initial forward tilt, deg", -20.0, 20.0),
            "push_Ns": Param(6.0, "push on the body, N s (over 0.1 s)", 0.0, 20.0),
            "turn_deg": Param(90.0, "turn in place asked at 0.5 s, deg (positive: left)", -180.0, 180.0)},
)
def biped_firmware(ctx: Context) -> dict:
    model = scenarios.robot()
    height = scenarios.stance_height(scenarios.ALPHA_NOMINAL)
    # name -> (scenario, the reference flashed into the firmware: the scenario's own)
    runs = {"balance": (scenarios.balance_scenario(ctx.params["tilt_deg"], 2.0 if ctx.short else 4.0), {}),
            "push": (scenarios.push_scenario(ctx.params["push_Ns"], after=1.5 if ctx.short else 3.0), {}),
            "turn": (turn_scenario(ctx.params["turn_deg"], 2.0 if ctx.short else 4.0, height),
                     {"yaw": float(np.radians(ctx.params["turn_deg"])), "start": 0.5})}
    builds = {precision: firmware(precision) for precision in ("double", "float")}
    metrics: dict = {}
    worst, yaw_apart, final_yaw, fell = 0.0, 0.0, 0.0, []
    fig, axes = figures.figure(1, 4, width=18.0, height=3.4)
    pairs = (("double", "python", "-"), ("float", "python", "--"), ("float", "double", ":"))  # (a, b, gap's style)
    for (name, (sc, reference)), ax in zip(runs.items(), axes[:3], strict=True):
        traces = {"python": run_in_loop(model, sc, scenarios.controller_for())}
        for precision, c in builds.items():
            traces[precision] = run_in_loop(model, sc, flash(c, model, scenarios.controller_for(), height, **reference))
        fell += [f"{name} ({who})" for who, trace in traces.items() if trace.stopped]
        metrics[name] = {**{f"{a}_vs_{b}": compare(model, traces[a], traces[b]) for a, b, _ in pairs},
                         "final_pitch_deg": {who: float(_pitch_deg(model, tr)[-1]) for who, tr in traces.items()}}
        worst = max(worst, metrics[name]["float_vs_python"]["pitch_deg"])
        yaw_apart = max(yaw_apart, metrics[name]["float_vs_python"]["yaw_deg"])
        final_yaw = max(final_yaw, abs(float(_yaw_deg(model, traces["float"])[-1]
                                             - _yaw_deg(model, traces["python"])[-1])))
        n = min(trace.t.size for trace in traces.values())
        angle, what = (_yaw_deg, "yaw") if name == "turn" else (_pitch_deg, "pitch")
        for who, trace in traces.items():
            ax.plot(trace.t, angle(model, trace), "--" if who == "float" else "-", label=who)
        for a, b, style in pairs:
            gap = np.abs(_pitch_deg(model, traces[a])[:n] - _pitch_deg(model, traces[b])[:n])
            axes[3].semilogy(traces["python"].t[:n], np.maximum(gap, 1e-12), style, label=f"{name}: {a} - {b}")
        ax.set(xlabel="t (s)", ylabel=f"{what} (deg)", title=name)
        ax.legend(fontsize=7)
    axes[3].set(xlabel="t (s)", ylabel="|pitch difference| (deg)")
    axes[3].legend(fontsize=6)
    float_effect = max(metrics[name]["float_vs_double"]["pitch_deg"] for name in runs)
    passed = not fell and worst <= PITCH_TOL_DEG and final_yaw <= PITCH_TOL_DEG
    measured = (f"float firmware within {worst:.2g} deg of Python's pitch (float vs double {float_effect:.1g}); "
                f"yaw up to {yaw_apart:.2g} deg apart in the turn, {final_yaw:.1g} at the end"
                + (f"; fell: {', '.join(fell)}" if fell else ""))
    metrics["final_yaw_apart_deg"] = final_yaw
    fig.suptitle(f"biped firmware: {measured}")
    ctx.savefig(fig, "pitch.png")
    return {**Verdict(passed, measured).as_metrics(), **metrics}
