"""The biped's closed-loop scenarios as functions: each returns ``(trace, metrics)``.

Callable from a script or a notebook, without a results folder::

    from crossdyn.experiments.biped import balance_recovery
    trace, metrics = balance_recovery(tilt_deg=12, weights={"q_theta": 300})
    metrics["settling_time_s"], trace.t, trace.true_pitch

Every scenario runs ``crossdyn.controllers.biped.controller.BipedController`` on the full five-bar
robot in MuJoCo and measures the run (:mod:`crossdyn.experiments.biped.control` judges and
plots).  Every scenario takes the fields of a :class:`Setup` as keyword arguments; the gains
are designed on the nominal robot, the perturbations and imperfections change only the robot.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field, replace
from pathlib import Path

import mujoco
import numpy as np

from ...analytic.biped.five_bar import STROKE
from ...analytic.biped.jump import extension_stroke
from ...analytic.biped.wheeled_pendulum import linearize_pendulum
from ...analytic.rotation import pitch
from ...controllers.biped.controller import DEFAULT_Q, DEFAULT_R, BipedController, Reference
from ...controllers.biped.jump import JumpPlan
from ...controllers.lqr import dlqr, lqr
from ..core.errors import ParameterError
from .closed_loop import (
    FALL_PITCH,
    Scenario,
    ScenarioTrace,
    make_controller,
    simulate_scenario,
)
from .imperfections import Imperfections
from .measurements import reduced_linearization
from .model import STANCE, Ground, balance_pose, biped_params, build, nominal_params

__all__ = ["CONTROL_PERIOD", "ALPHA_NOMINAL", "WEIGHTS", "Setup", "robot", "controller_for", "stance_height",
           "settling_time", "balanced", "holding", "push_recovered", "common_metrics", "estimator_error",
           "imperfections_for", "balance_scenario", "push_scenario", "balance_recovery", "velocity_tracking", "turn",
           "height_change", "roll_leveling", "push_recovery", "jump", "robustness", "lqr_cost"]

CONTROL_PERIOD = 0.001  # s: 1 kHz; at 2 ms the leg-swing loop chatters
ALPHA_NOMINAL = STANCE  # mid-stroke stance (experiments.biped.model.STANCE)
PUSH_START = 0.5  # s: the push comes after the estimator has settled

# The LQR weights on [x, xd, theta, thetad] and on the total wheel torque.
WEIGHTS = ("q_x", "q_xd", "q_theta", "q_thetad", "r")
DEFAULT_WEIGHTS = dict(zip(WEIGHTS, (*DEFAULT_Q, DEFAULT_R), strict=False))


@dataclass(frozen=True)
class Setup:
    """The robot a scenario drives and the controller that drives it.

    Attributes:
      weights: LQR weights by name (:data:`WEIGHTS`); missing ones take the defaults.
      body_mass_scale: body mass and inertia scale of the robot driven (the gains stay nominal).
      com_offset_x: body CoM shift forward, m (gains stay nominal).
      ground_truth: feed the controller MuJoCo's state instead of its sensors.
      mjcf: the robot (:func:`~crossdyn.experiments.biped.model.robot_path`; ``""``: the built-in one).
      imperfections: sensor, motor and ground imperfections
        (:class:`~crossdyn.experiments.biped.imperfections.Imperfections`).
      seed: seed of the imperfections' random draws.
    """

    weights: dict = field(default_factory=dict)
    body_mass_scale: float = 1.0
    com_offset_x: float = 0.0
    ground_truth: bool = False
    mjcf: str = ""
    imperfections: Imperfections = field(default_factory=Imperfections)
    seed: int = 0

    def __post_init__(self):
        unknown = sorted(set(self.weights) - set(WEIGHTS))
        if unknown:
            raise ParameterError(f"unknown LQR weight(s) {', '.join(unknown)}; known: {', '.join(WEIGHTS)}")

    @classmethod
    def from_values(cls, values: dict) -> Setup:
        """A setup from flat ``--set`` values (the imperfections' names and ``realistic`` included),
        ignoring other keys."""
        names = {f.name for f in dataclasses.fields(cls)} - {"weights", "imperfections"}
        return cls(weights={k: float(values[k]) for k in WEIGHTS if k in values},
                   imperfections=Imperfections.from_values(values),
                   **{k: values[k] for k in names if k in values})

    def with_(self, **changes) -> Setup:
        """A copy with some fields changed."""
        return replace(self, **changes)


def robot(setup: Setup | dict | None = None, ground: Ground | None = None) -> mujoco.MjModel:
    """The setup's robot with its perturbations (mass scale, CoM offset) and its
    imperfections' floor and payload (``ground``, if given, replaces the floor)."""
    setup = _setup(setup)
    imp = setup.imperfections
    model = build(com_offset=(float(setup.com_offset_x), 0.0), mjcf=setup.mjcf, ground=ground or imp.ground(),
                  payload=imp.payload())
    scale = float(setup.body_mass_scale)
    if scale != 1.0:
        body = model.body("body").id
        model.body_mass[body] *= scale
        model.body_inertia[body] *= scale
        mujoco.mj_setConst(model, mujoco.MjData(model))
    return model


def controller_for(setup: Setup | dict | None = None, jump: JumpPlan | None = None) -> BipedController:
    """A controller designed on the *nominal* robot with the setup's LQR weights.

    Raises:
      ParameterError: the weights admit no stabilizing design.
    """
    setup = _setup(setup)
    p = nominal_params(setup.mjcf)
    weights = {**DEFAULT_WEIGHTS, **setup.weights}
    Q = tuple(float(weights[k]) for k in WEIGHTS[:4])
    R = float(weights["r"])
    try:
        return make_controller(p, CONTROL_PERIOD, Q=Q, R=R, jump=jump)
    except ValueError as exc:  # e.g. all-zero Q: no stabilizing design
        raise ParameterError(f"LQR weights Q={Q}, R={R}: {exc}") from None


def _setup(setup) -> Setup:
    if setup is None:
        return Setup()
    return setup if isinstance(setup, Setup) else Setup.from_values(setup)


def stance_height(alpha: float = ALPHA_NOMINAL, mjcf: str = "") -> float:
    """The nominal robot's hip-line height above the axle at leg angle ``alpha``, m."""
    return float(nominal_params(mjcf).leg_height(alpha))


def imperfections_for(setup: Setup) -> list:
    """The setup's sensing and actuation imperfections on the robot's sensors and motors
    (:meth:`Imperfections.generic`; the run draws their noise from ``setup.seed``)."""
    if not setup.imperfections.on_hardware:
        return []
    return setup.imperfections.generic(nominal_params(setup.mjcf), CONTROL_PERIOD)


def _run(sc: Scenario, setup: Setup, model=None, ctrl=None, video: Path | None = None) -> ScenarioTrace:
    sc = replace(sc, ground_truth=bool(setup.ground_truth), control_period=CONTROL_PERIOD)
    return simulate_scenario(model if model is not None else robot(setup), sc, ctrl or controller_for(setup),
                             video=video, imperfections=imperfections_for(setup), seed=setup.seed)


# --------------------------------------------------------------------------- measures of a trace
def settling_time(t: np.ndarray, ok: np.ndarray, start: float = 0.0) -> float:
    """Time from ``start`` after which ``ok`` holds to the end of the run (inf if never), s."""
    after = t >= start
    bad = np.flatnonzero(after & ~ok)
    if bad.size == 0:
        return 0.0
    if bad[-1] + 1 >= t.size:
        return float("inf")
    return float(t[bad[-1] + 1] - start)


def balanced(trace: ScenarioTrace) -> np.ndarray:
    """Per control step, upright and still by balance-recovery's measure: |theta| < 0.5 deg, |xd| < 0.02 m/s."""
    return (np.abs(np.degrees(trace.true_pitch)) < 0.5) & (np.abs(trace.true_xd) < 0.02)


def push_recovered(trace: ScenarioTrace) -> bool:
    """Still up, within 2 deg of upright over the last 0.5 s."""
    end = trace.window(trace.t[-1] - 0.5)
    return bool(not trace.fell and np.abs(np.degrees(trace.true_pitch[end])).max() < 2.0)


def holding(trace: ScenarioTrace) -> bool:
    """Up and no longer rolling, |xd| < 0.05 m/s over the last 0.5 s (robustness's measure: a steady lean is fine)."""
    end = trace.window(trace.t[-1] - 0.5)
    return bool(not trace.fell and np.abs(trace.true_xd[end]).max() < 0.05)


def common_metrics(trace: ScenarioTrace) -> dict:
    """What every closed-loop run reports: fell, diverged, tilt, torques, closure, saturation (the fraction
    of control steps with a command at its limit) and the estimator's error."""
    wheel_saturated = np.abs(trace.wheel_torque) >= trace.wheel_limit - 1e-9
    hip_saturated = np.abs(trace.hip_torque) >= trace.hip_limit - 1e-9
    return {
        "fell": bool(trace.fell), "diverged": bool(trace.diverged),
        "max_tilt_deg": float(np.degrees(np.abs(trace.true_pitch)).max()),
        "max_wheel_torque": float(np.abs(trace.wheel_torque).max()),
        "max_hip_torque": float(np.abs(trace.hip_torque).max()),
        "closure_error_max_mm": float(trace.closure.max() * 1e3),
        "duration_s": float(trace.t[-1]) if trace.t.size else 0.0,
        "wheel_saturation_fraction": float(wheel_saturated.any(axis=1).mean()),
        "hip_saturation_fraction": float(hip_saturated.any(axis=1).mean()),
        "estimator_error": estimator_error(trace),
    }


def estimator_error(trace: ScenarioTrace) -> dict:
    """How far the controller's estimate was from MuJoCo's state: pitch (deg), speed (m/s), travel (m)."""
    pitch = np.degrees(trace.est_pitch - trace.true_pitch)
    speed = trace.est_xd - trace.true_xd
    travel = trace.est_x - trace.true_x
    return {"pitch_rms_deg": float(np.sqrt(np.mean(pitch**2))), "pitch_max_deg": float(np.abs(pitch).max()),
            "speed_rms_m_s": float(np.sqrt(np.mean(speed**2))), "x_max_m": float(np.abs(travel).max())}


# --------------------------------------------------------------------------- scenarios
def balance_scenario(initial_tilt_deg: float, duration: float = 4.0, mjcf: str = "") -> Scenario:
    """The balance-recovery run: mid-stroke stance tilted forward by ``initial_tilt_deg``, height held."""
    height = stance_height(ALPHA_NOMINAL, mjcf)
    return Scenario(duration=duration, alpha0=ALPHA_NOMINAL, reference=lambda t: Reference(height=height),
                    initial_tilt=np.radians(initial_tilt_deg), control_period=CONTROL_PERIOD)


def push_scenario(impulse: float, length: float = 0.1, after: float = 3.0, mjcf: str = "") -> Scenario:
    """Upright at mid-stroke, pushed forward on the body by ``impulse`` N s over ``length`` s, watched ``after`` s."""
    return replace(balance_scenario(0.0, PUSH_START + after, mjcf), push=(PUSH_START, impulse / length, length))


def balance_recovery(tilt_deg: float = 10.0, *, duration: float = 4.0, video: Path | None = None,
                     **setup) -> tuple[ScenarioTrace, dict]:
    """Balance from a forward tilt of ``tilt_deg`` back to upright and still.

    Metrics: ``settling_time_s`` (until |theta| < 0.5 deg and |xd| < 0.02 m/s
    hold to the end; inf if never), the gain schedule's fit error and gains at
    stance, odometry error, and :func:`common_metrics`.
    """
    cfg = Setup(**setup)
    ctrl = controller_for(cfg)
    trace = _run(balance_scenario(tilt_deg, duration, cfg.mjcf), cfg, ctrl=ctrl, video=video)
    settle = settling_time(trace.t, balanced(trace)) if not trace.fell else float("inf")
    return trace, {"settling_time_s": settle, "gain_schedule_fit_error": ctrl.gains.schedule.fit_error,
                   "gain_at_stance": ctrl.gains.schedule(stance_height(ALPHA_NOMINAL, cfg.mjcf)).tolist(),
                   "final_x_m": float(trace.true_x[-1]),
                   "max_odometry_error_m": float(np.abs(trace.est_x - trace.true_x).max()), **common_metrics(trace)}


def velocity_tracking(speed: float = 1.0, *, video: Path | None = None, **setup) -> tuple[ScenarioTrace, dict]:
    """Stand, drive at ``speed`` m/s from 0.5 s to 5 s, stop; 7.5 s in all.

    Metrics: ``rise_time_95_s`` (to 95 % of the speed), ``steady_state_error_pct``
    (mean over the last second of the cruise), overshoot, the speed left at the end.

    Raises:
      ParameterError: ``speed`` is zero.
    """
    cfg = Setup(**setup)
    start, stop = 0.5, 5.0
    if speed == 0:
        raise ParameterError("velocity-tracking needs a non-zero speed")
    height = stance_height(ALPHA_NOMINAL, cfg.mjcf)
    sc = Scenario(duration=7.5, alpha0=ALPHA_NOMINAL,
                  reference=lambda t: Reference(velocity=speed if start <= t < stop else 0.0, height=height))
    trace = _run(sc, cfg, video=video)
    v = trace.true_xd / speed
    reached = np.flatnonzero((trace.t >= start) & (v >= 0.95))
    rise = float(trace.t[reached[0]] - start) if reached.size else float("inf")
    hold = trace.window(stop - 1.0, stop)
    ss_error = float(np.abs(v[hold] - 1.0).mean() * 100) if hold.any() else float("inf")
    stopped = trace.window(trace.t[-1] - 0.5)
    return trace, {"rise_time_95_s": rise, "steady_state_error_pct": ss_error,
                   "overshoot_pct": float((v[trace.window(start, stop)].max() - 1.0) * 100),
                   "final_speed_m_s": float(np.abs(trace.true_xd[stopped]).max()), **common_metrics(trace)}


def turn(turn_deg: float = 90.0, *, video: Path | None = None, **setup) -> tuple[ScenarioTrace, dict]:
    """Turn in place by ``turn_deg`` (positive: left) at 0.5 s; 4 s in all.

    Metrics: ``settling_time_s`` (until within 3 deg of the target for good),
    the final yaw error, overshoot and how far the axle drifted.
    """
    cfg = Setup(**setup)
    target, start = np.radians(turn_deg), 0.5
    height = stance_height(ALPHA_NOMINAL, cfg.mjcf)
    sc = Scenario(duration=4.0, alpha0=ALPHA_NOMINAL,
                  reference=lambda t: Reference(yaw=target if t >= start else 0.0, height=height))
    trace = _run(sc, cfg, video=video)
    error = np.degrees(trace.true_yaw - target)
    settle = settling_time(trace.t, np.abs(error) <= 3.0, start)
    return trace, {"settling_time_s": settle, "final_yaw_error_deg": float(error[-1]),
                   "overshoot_deg": float(np.max(np.sign(target) * error)),
                   "drift_m": float(np.abs(trace.true_x).max()), **common_metrics(trace)}


def height_change(*, video: Path | None = None, **setup) -> tuple[ScenarioTrace, dict]:
    """Crouched (start of the stroke) -> extended at 0.5 s -> crouched at 3 s; 5.5 s in all.

    Metrics: ``extend_time_s`` and ``retract_time_s``, each until the mean leg
    height is within 5 % of the stroke of its target for good.
    """
    cfg = Setup(**setup)
    low, high = stance_height(STROKE[0], cfg.mjcf), stance_height(STROKE[1], cfg.mjcf)
    up, down, end = 0.5, 3.0, 5.5
    sc = Scenario(duration=end, alpha0=STROKE[0],
                  reference=lambda t: Reference(height=high if up <= t < down else low))
    trace = _run(sc, cfg, video=video)
    h = trace.height.mean(axis=1)
    tol = 0.05 * (high - low)  # within 5 % of the stroke counts as arrived
    rise = settling_time(trace.t[trace.window(0, down)], np.abs(h[trace.window(0, down)] - high) <= tol, up)
    fall = settling_time(trace.t, np.abs(h - low) <= tol, down)
    return trace, {"extend_time_s": rise, "retract_time_s": fall, "stroke_m": high - low, **common_metrics(trace)}


def roll_leveling(step_m: float = 0.04, *, video: Path | None = None, **setup) -> tuple[ScenarioTrace, dict]:
    """Start with the left wheel on a ``step_m`` step; the virtual roll torque levels the body; 3 s.

    Metrics: ``steady_roll_deg`` (largest |roll| over the last second), the
    initial roll and the legs' height difference that levels the body.
    """
    cfg = Setup(**setup)
    model = robot(cfg, ground=replace(cfg.imperfections.ground(), left_step=step_m) if step_m > 0 else None)
    p = biped_params(model)
    height = float(p.leg_height(ALPHA_NOMINAL))
    roll0 = float(np.arcsin(step_m / p.pendulum.D))
    sc = Scenario(duration=3.0, alpha0=ALPHA_NOMINAL, reference=lambda t: Reference(height=height),
                  initial_roll=roll0, initial_lift=step_m / 2 + 1e-3)
    trace = _run(sc, cfg, model=model, video=video)
    steady = trace.window(trace.t[-1] - 1.0)
    return trace, {
        "steady_roll_deg": float(np.degrees(np.abs(trace.true_roll[steady])).max()),
        "initial_roll_deg": float(np.degrees(roll0)),
        "leg_height_difference_m": float(np.diff(trace.height[steady].mean(axis=0))[0]),
        **common_metrics(trace),
    }


def push_recovery(push_duration_s: float = 0.1, max_impulse: float = 30.0, *, bisections: int = 8,
                  video_dir: Path | None = None, **setup) -> tuple[ScenarioTrace | None, dict]:
    """The largest forward push on the body (over ``push_duration_s``) the robot recovers from.

    Tries ``max_impulse`` N s, then bisects ``bisections`` times between the last
    recovered and the first failing impulse.  Returns the trace of the largest
    recovered push (None if none was) and ``max_recovered_impulse_Ns``,
    ``first_failing_impulse_Ns``, the trials, and that trace's common metrics.
    """
    cfg = Setup(**setup)
    model = robot(cfg)
    ctrl0 = controller_for(cfg)

    def recovered(impulse: float) -> tuple[bool, ScenarioTrace]:
        video = None if video_dir is None else Path(video_dir) / f"push_{impulse:.2f}.mp4"
        trace = _run(push_scenario(impulse, push_duration_s, mjcf=cfg.mjcf), cfg, model=model,
                     ctrl=copy.deepcopy(ctrl0), video=video)
        return push_recovered(trace), trace

    low, high = 0.0, float(max_impulse)
    best: ScenarioTrace | None
    ok, best = recovered(high)
    trials = [(high, ok)]
    if not ok:
        best = None
        for _ in range(bisections):
            mid = 0.5 * (low + high)
            ok, trace = recovered(mid)
            trials.append((mid, ok))
            if ok:
                low, best = mid, trace
            else:
                high = mid
    else:
        low = high
    return best, {"max_recovered_impulse_Ns": low, "first_failing_impulse_Ns": high if low < high else None,
                  "margin_Ns": high - low, "trials": [{"impulse_Ns": i, "recovered": r} for i, r in trials],
                  **(common_metrics(best) if best is not None else {"fell": True})}  # of the largest recovered push


def jump(thrust_torque: float | None = None, *, video: Path | None = None, **setup) -> tuple[ScenarioTrace, dict]:
    """Crouch, thrust at ``thrust_torque`` (default: the hip motors' limit), retract, fly, land, balance; 4 s.

    Metrics: apex clearance of the lower wheel, airborne time, take-off speed and
    the stroke ODE's prediction (the jump's extension phase), the body's rise after lift-off and the
    ballistic prediction, time to balance after landing, the phase transitions.
    """
    cfg = Setup(**setup)
    p = nominal_params(cfg.mjcf)
    if thrust_torque is not None and not 0 < thrust_torque <= p.hip_torque_limit:
        raise ParameterError(f"thrust_torque={thrust_torque:g} N m: the hip motors give at most "
                             f"{p.hip_torque_limit:g} N m")
    plan = JumpPlan(thrust_torque=thrust_torque)
    low = stance_height(plan.alpha_crouch, cfg.mjcf)
    sc = Scenario(duration=4.0, alpha0=np.radians(200.0), reference=lambda t: Reference(height=low), jump=plan)
    ctrl = controller_for(cfg, jump=plan)
    trace = _run(sc, cfg, ctrl=ctrl, video=video)
    phases = dict((ph, t) for t, ph in reversed(trace.transitions))  # first entry of each phase
    clearance = trace.wheel_z.min(axis=1)  # the lower wheel's bottom above the floor
    airborne = clearance > 0.005
    takeoff = phases.get("retract")
    body_vz = np.gradient(trace.body_z, trace.t)
    thrust = trace.window(phases.get("thrust", 0), (takeoff or 0) + 0.05)
    takeoff_speed = float(body_vz[thrust].max()) if takeoff else 0.0
    landed = "landing" in phases
    balanced_at = None
    if landed and not trace.fell:
        after = trace.t >= phases["landing"]
        ok = (np.abs(np.degrees(trace.true_pitch)) < 2.0) & (np.abs(trace.true_xd) < 0.1)
        settle = settling_time(trace.t, ok, phases["landing"])
        balanced_at = settle if np.isfinite(settle) and after.any() else None
    # Ballistic body rise after take-off, measured and as the stroke ODE predicts it.
    t_off = phases.get("flight", trace.t[-1])
    body_rise = float(trace.body_z[trace.t >= t_off].max() - trace.body_z[trace.t >= t_off][0]) if takeoff else 0.0
    torque = ctrl.jump.thrust_torque if ctrl.jump is not None else None
    assert torque is not None  # BipedController fills in the plan's None (the motors' limit)
    stroke = extension_stroke(p.pendulum.M, torque, p.l1, p.l2, p.l3, plan.alpha_crouch, plan.alpha_takeoff)
    return trace, {
        "thrust_torque_N_m": torque, "apex_clearance_m": float(clearance.max()),
        "airborne_time_s": float(airborne.sum() * CONTROL_PERIOD), "takeoff_speed_m_s": takeoff_speed,
        "predicted_takeoff_speed_m_s": float(stroke.takeoff_velocity), "body_rise_after_liftoff_m": body_rise,
        "predicted_body_rise_m": float(stroke.takeoff_velocity**2 / (2 * p.pendulum.g)), "landed": landed,
        "balanced_after_landing_s": balanced_at, "phases": trace.transitions,
        "explanation": ("The extension-phase ODE accelerates the body alone with massless legs and "
                        "ignores the wheels and leg links the legs must also lift at take-off, so the "
                        "robot leaves the ground slower than the ODE predicts (the legs take ~12 % of "
                        "the hip work). The body then also carries the legs and wheels up, and pulls them "
                        "in, so it rises less than the ODE's ballistic v^2 / 2g."),
        **common_metrics(trace),
    }


# The robustness experiment's robots: nominal gains on each (changes to the Setup).
ROBUSTNESS_VARIANTS = {"nominal": {}, "mass -30%": {"body_mass_scale": 0.7}, "mass +30%": {"body_mass_scale": 1.3},
                       "CoM +2 cm": {"com_offset_x": 0.02}, "CoM -2 cm": {"com_offset_x": -0.02}}


def robustness(tilt_deg: float = 10.0, *, variants: dict | None = None, video_dir: Path | None = None,
               **setup) -> tuple[dict[str, ScenarioTrace], dict]:
    """Balance recovery with nominal gains on perturbed robots (:data:`ROBUSTNESS_VARIANTS`).

    Returns the trace of each variant and, per variant, whether it holds
    (:func:`holding`), why not, its largest tilt, final pitch and travel.
    """
    cfg = Setup(**setup)
    traces: dict[str, ScenarioTrace] = {}
    rows: dict[str, dict] = {}
    for name, change in (variants or ROBUSTNESS_VARIANTS).items():
        robot_setup = cfg.with_(**change)
        video = None if video_dir is None else Path(video_dir) / f"{name.replace(' ', '_')}.mp4"
        trace = _run(balance_scenario(tilt_deg, mjcf=cfg.mjcf), robot_setup, model=robot(robot_setup),
                     ctrl=controller_for(cfg.with_(weights={})), video=video)
        end = trace.window(trace.t[-1] - 0.5)
        calm = holding(trace)
        why = None
        if trace.fell:
            tilt = np.degrees(np.abs(trace.true_pitch)).max()
            why = "diverged" if trace.diverged else f"fell (max tilt {tilt:.0f} deg)"
        elif not calm:
            why = f"still moving at {np.abs(trace.true_xd[end]).max():.3f} m/s"
        rows[name] = {"balanced": bool(calm), "why": why,
                      "max_tilt_deg": float(np.degrees(np.abs(trace.true_pitch)).max()),
                      "final_pitch_deg": float(np.degrees(trace.true_pitch[-1])), "final_x_m": float(trace.true_x[-1])}
        traces[name] = trace
    return traces, {
        "fell": any(r["why"] is not None and r["why"].startswith(("fell", "diverged")) for r in rows.values()),
        "variants": rows,
    }


@dataclass
class IdealRun:
    """The rigid-leg robot under ``T = -K x``: state ``(N, 4)`` ``[x, xd, theta, thetad]``, torque ``(N,)``, dt."""

    states: np.ndarray
    torques: np.ndarray
    dt: float


def lqr_cost(tilt_deg: float = 2.0, *, duration: float = 10.0, weights: dict | None = None,
             mjcf: str = "") -> tuple[IdealRun, dict]:
    """The ideal robot (rigid massless legs): realised LQR cost vs the Riccati prediction ``x0' S x0``.

    Designs the LQR twice, from the analytic linearized wheeled pendulum and from
    MuJoCo's own linearization (``mjd_transitionFD``, discrete), and runs the analytic design.
    Returns the analytic design's run and, per design, gains, predicted and
    realised cost and their relative error.
    """
    alpha = ALPHA_NOMINAL
    w = {**DEFAULT_WEIGHTS, **(weights or {})}
    model = build(legs="massless", rigid_alpha=alpha, mjcf=mjcf)
    p = biped_params(model)
    height = float(p.leg_height(alpha))
    Q = np.diag([w[k] for k in WEIGHTS[:4]])
    R = np.array([[w["r"]]])
    analytic_design = lqr(*linearize_pendulum(p.pendulum, height), Q, R)
    data = mujoco.MjData(model)
    data.qpos[:], _ = balance_pose(model, alpha, p)
    mujoco.mj_forward(model, data)
    dt = model.opt.timestep
    # The discrete cost sums (x'Qx + u'Ru) dt, so the weights are scaled by dt for a like-for-like S.
    mujoco_design = dlqr(*reduced_linearization(model, data, height), Q * dt, R * dt)
    theta0 = np.radians(tilt_deg)
    x0 = np.array([0.0, 0.0, theta0, 0.0])
    results, runs = {}, {}
    for name, design_ in (("analytic", analytic_design), ("mujoco", mujoco_design)):
        cost, states, torques = _ideal_cost(model, p, height, alpha, design_.K, Q, R, theta0, duration)
        results[name] = {"K": design_.K.tolist(), "predicted_cost": design_.cost(x0), "realised_cost": cost,
                         "relative_error": abs(cost - design_.cost(x0)) / design_.cost(x0)}
        runs[name] = IdealRun(states, torques, dt)
    run = runs["analytic"]
    K_a, K_m = np.array(results["analytic"]["K"]), np.array(results["mujoco"]["K"])
    return run, {"fell": bool(np.abs(run.states[:, 2]).max() > FALL_PITCH),
                 "max_tilt_deg": float(np.degrees(np.abs(run.states[:, 2]).max())),
                 "cost_ratio": results["analytic"]["realised_cost"] / results["analytic"]["predicted_cost"],
                 "designs": results, "gain_difference_rel": float(np.abs(K_a - K_m).max() / np.abs(K_m).max())}


def _ideal_cost(model, p, height, alpha, K, Q, R, theta0, duration):
    """Run the rigid-leg robot under ``T = -K x`` of MuJoCo's state at every physics step: ``(cost, states,
    torques)``; only the model differs from the LQR's prediction (leg links, contact softness, nonlinearity)."""
    data = mujoco.MjData(model)
    qpos, _ = balance_pose(model, alpha, p)
    qpos[0:3] = [height * np.sin(theta0), 0.0, p.pendulum.r + height * np.cos(theta0)]
    qpos[3:7] = [np.cos(theta0 / 2), 0.0, np.sin(theta0 / 2), 0.0]
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    wheels = [model.actuator(f"{s}_wheel").id for s in ("left", "right")]
    axles = [model.site(f"{s}_axle").id for s in ("left", "right")]
    x_start = 0.5 * (data.site_xpos[axles[0], 0] + data.site_xpos[axles[1], 0])
    dt = model.opt.timestep
    steps = int(round(duration / dt))
    cost, states, torques = 0.0, np.zeros((steps, 4)), np.zeros(steps)
    vel = np.zeros(6)
    for k in range(steps):
        x = 0.5 * (data.site_xpos[axles[0], 0] + data.site_xpos[axles[1], 0]) - x_start
        xd = 0.0
        for s in axles:
            mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_SITE, s, vel, 0)
            xd += 0.5 * vel[3]
        state = np.array([x, xd, pitch(data.qpos[3:7]), data.qvel[4]])
        u = float(-(K @ state).item())
        cost += (state @ Q @ state + R[0, 0] * u * u) * dt
        states[k], torques[k] = state, u
        data.ctrl[wheels] = 0.5 * u
        mujoco.mj_step(model, data)
    return cost, states, torques
