"""Closed-loop experiments of the wheel-legged biped: judged and plotted.

Each experiment runs one scenario of :mod:`crossdyn.experiments.biped.scenarios`, judges
its metrics (the ``judge_*`` functions) and plots the trace (:func:`plot_states`).  Every
experiment takes ``--set mjcf=PATH``; every closed loop but ``lqr-cost`` (a check of the
LQR's own theory on the ideal robot) also takes the imperfections of
:mod:`~crossdyn.experiments.biped.imperfections` and ``realistic=true``, and reports its
metrics both ways: as set, and under the other of ideal / realistic in a sub-dict
(``realistic`` or ``ideal``).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
from matplotlib.figure import Figure

from ...controllers.biped.controller import DEFAULT_Q, DEFAULT_R
from ..core import figures
from ..core.margins import write_margins
from ..core.registry import Param, Verdict, experiment
from ..core.runner import Context
from . import imperfections, loop_margins, scenarios
from .closed_loop import ScenarioTrace, video_environment
from .model import MJCF
from .scenarios import Setup

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Wheel-legged biped: closed loops"
DERIVATION_PAGE = "biped-control"

__all__ = ["COMMON", "MJCF", "IMPERFECTIONS", "plot_states", "plot_jump_heights", "plot_ideal_run"] + [
    f"judge_{name}" for name in ("balance_recovery", "velocity_tracking", "turn", "height_change", "roll_leveling",
                                 "push_recovery", "jump", "robustness", "lqr_cost")]

# The imperfections (one --set parameter each) and their preset.
IMPERFECTIONS = {**imperfections.PARAMS,
                 "realistic": Param(False, "the realistic preset of sensor, motor and ground imperfections")}

# The experiments' own loop measurements take the short sweep in either mode (12.6 s of robot, its lower gain
# margin and its crossover both inside it); crossdyn margins takes the full one (38 s: a ground-truth run's
# estimate in Python costs seconds more there).
MARGINS_SHORT = True

# Parameters every closed-loop experiment accepts through --set (the fields of a Setup).
COMMON = {
    "ground_truth": Param(False, "feed the controller MuJoCo's state instead of the sensors"),
    "body_mass_scale": Param(1.0, "body mass and inertia scale (gains stay nominal)", 0.3, 3.0),
    "com_offset_x": Param(0.0, "body CoM shift forward, m (gains stay nominal)", -0.1, 0.1),
    "q_x": Param(DEFAULT_Q[0], "LQR weight on position, 1/m^2", 0.0, 1e6),
    "q_xd": Param(DEFAULT_Q[1], "LQR weight on speed, s^2/m^2", 0.0, 1e6),
    "q_theta": Param(DEFAULT_Q[2], "LQR weight on pitch, 1/rad^2", 0.0, 1e6),
    "q_thetad": Param(DEFAULT_Q[3], "LQR weight on pitch rate, s^2/rad^2", 0.0, 1e6),
    "r": Param(DEFAULT_R, "LQR weight on total wheel torque, 1/(N m)^2", 1e-6, 1e6),
    "mjcf": MJCF,
    **IMPERFECTIONS,
}


def _params(**extra) -> dict:
    return {**COMMON, **extra}


def _setup(ctx: Context) -> dict:
    """The :class:`Setup` fields from the experiment's parameters (and seed), as keyword arguments."""
    s = Setup.from_values({**ctx.params, "seed": ctx.seed})
    return {f.name: getattr(s, f.name) for f in dataclasses.fields(s)}


def _other(ctx: Context) -> tuple[str, dict]:
    """The run to compare with, ``(name, setup keywords)``: ``realistic`` if this run is ideal, else ``ideal``."""
    setup = _setup(ctx)
    if ctx.params.get("realistic"):
        return "ideal", {**setup, "imperfections": imperfections.Imperfections()}
    return "realistic", {**setup, "imperfections": imperfections.REALISTIC}


def _with_other(ctx: Context, judge, run) -> dict:
    """``{name: {passed, measured, imperfections, ...metrics}}`` of ``run(**setup)`` under :func:`_other`."""
    name, setup = _other(ctx)
    metrics = run(**setup)
    return {name: {**judge(metrics).as_metrics(), "imperfections": setup["imperfections"].as_dict(), **metrics}}


def _scenario(ctx: Context, run, judge, title: str, also=None) -> dict:
    """One scenario's experiment: ``run(video=..., **setup) -> (trace, metrics)``, judged, its states plotted
    under ``title`` (and ``also(trace)``: more plots), and the same scenario under :func:`_other` beside it."""
    trace, metrics = run(video=_video(ctx), **_setup(ctx))
    if ctx.plots:  # a sweep's runs draw nothing
        ctx.savefig(plot_states(trace, title), "states.png")
        if also is not None:
            also(trace)
    other = _with_other(ctx, judge, lambda **s: run(**s)[1])
    return {**judge(metrics).as_metrics(), **metrics, **other}


def _video_dir(ctx: Context):
    """Where to write the experiment's videos, or None (``--video`` not given)."""
    if not ctx.video:
        return None
    video_environment()
    return ctx.out_dir


def _video(ctx: Context):
    folder = _video_dir(ctx)
    return None if folder is None else folder / f"{ctx.name}.mp4"


# --------------------------------------------------------------------------- judges
def judge_balance_recovery(m: dict) -> Verdict:
    """Upright and still (|theta| < 0.5 deg, |xd| < 0.02 m/s) within 3 s, without falling."""
    settle = m["settling_time_s"]
    measured = f"settled in {settle:.2f} s" if np.isfinite(settle) else ("fell" if m["fell"] else "did not settle")
    return Verdict(not m["fell"] and settle <= 3.0, measured)


def judge_velocity_tracking(m: dict) -> Verdict:
    """95 % of the speed within 2 s, steady-state error under 2 %."""
    return Verdict(not m["fell"] and m["rise_time_95_s"] <= 2.0 and m["steady_state_error_pct"] < 2.0,
                   f"95 % in {m['rise_time_95_s']:.2f} s, steady-state error {m['steady_state_error_pct']:.2f} %")


def judge_turn(m: dict) -> Verdict:
    """Within 3 deg of the target heading within 2 s."""
    return Verdict(not m["fell"] and m["settling_time_s"] <= 2.0,
                   f"within 3 deg after {m['settling_time_s']:.2f} s, final error {m['final_yaw_error_deg']:+.2f} deg")


def judge_height_change(m: dict) -> Verdict:
    """The full stroke each way within 1.5 s, without falling."""
    return Verdict(not m["fell"] and m["extend_time_s"] <= 1.5 and m["retract_time_s"] <= 1.5,
                   f"up in {m['extend_time_s']:.2f} s, down in {m['retract_time_s']:.2f} s")


def judge_roll_leveling(m: dict) -> Verdict:
    """Body roll under 1 deg in steady state."""
    return Verdict(not m["fell"] and m["steady_roll_deg"] < 1.0,
                   f"steady roll {m['steady_roll_deg']:.2f} deg (from {m['initial_roll_deg']:.1f} deg)")


def judge_push_recovery(m: dict) -> Verdict:
    """Some push is recovered; the measure is the largest one, with its bracket."""
    low, high = m["max_recovered_impulse_Ns"], m["first_failing_impulse_Ns"]
    measured = f"recovered {low:.2f} N s (fails by {high:.2f} N s)" if high is not None else f">= {low:.2f} N s"
    return Verdict(low > 0, measured)


def judge_jump(m: dict) -> Verdict:
    """Both wheels at least 0.10 m up at the apex, landed, balanced within 2 s of landing."""
    apex, balanced_at = m["apex_clearance_m"], m["balanced_after_landing_s"]
    passed = apex >= 0.10 and m["landed"] and not m["fell"] and balanced_at is not None and balanced_at <= 2.0
    return Verdict(passed, f"apex clearance {apex:.3f} m, take-off {m['takeoff_speed_m_s']:.2f} m/s, "
                   + (f"balanced {balanced_at:.2f} s after landing" if balanced_at is not None else "not balanced"))


def judge_robustness(m: dict) -> Verdict:
    """Every perturbed robot holds (failures named with why)."""
    failing = [n for n, r in m["variants"].items() if not r["balanced"]]
    return Verdict(not failing, "all balance" if not failing
                   else "failing: " + ", ".join(f"{n} ({m['variants'][n]['why']})" for n in failing))


def judge_lqr_cost(m: dict) -> Verdict:
    """The realised cost of the analytic design within 5 % of ``x0' S x0``."""
    return Verdict(m["designs"]["analytic"]["relative_error"] <= 0.05,
                   f"realised/predicted cost {m['cost_ratio']:.4f}")


# --------------------------------------------------------------------------- plots
def plot_states(trace: ScenarioTrace, title: str) -> Figure:
    """States and torques over time, with references and the torque limits shaded."""
    fig, axes = figures.figure(4, 2, width=12.0, height=2.3, sharex=True)
    t, ref = trace.t, trace.reference
    panels: dict[tuple[int, int], tuple[str, bool, list]] = {  # axes -> (y label, legend?, [(values, style, label)])
        (0, 0): ("pitch (deg)", True, [(np.degrees(trace.true_pitch), "-", "true"),
                                       (np.degrees(trace.est_pitch), "--", "estimate")]),
        (0, 1): ("speed (m/s)", True, [(trace.true_xd, "-", "true"), (trace.est_xd, "--", "estimate"),
                                       (ref[:, 0], "k:", "reference")]),
        (1, 0): ("yaw (deg)", False, [(np.degrees(trace.true_yaw), "-", "yaw"),
                                      (np.degrees(ref[:, 1]), "k:", "reference")]),
        (1, 1): ("leg height (m)", True, [(trace.height[:, 0], "-", "left"), (trace.height[:, 1], "-", "right"),
                                          (ref[:, 2], "k:", "reference")]),
        (2, 0): ("roll (deg)", False, [(np.degrees(trace.true_roll), "-", None)]),
        (2, 1): ("x (m)", True, [(trace.true_x, "-", "true"), (trace.est_x, "--", "odometry")]),
    }
    for (i, j), (ylabel, legend, curves) in panels.items():
        for values, style, label in curves:
            axes[i, j].plot(t, values, style, label=label)
        axes[i, j].set_ylabel(ylabel)
        if legend:
            axes[i, j].legend(fontsize=7)
    for ax, values, limit, name in ((axes[3, 0], trace.wheel_torque, trace.wheel_limit, "wheel torque (N m)"),
                                    (axes[3, 1], trace.hip_torque, trace.hip_limit, "leg torque (N m)")):
        ax.plot(t, values[:, 0], label="left")
        ax.plot(t, values[:, 1], label="right")
        for sign in (-1, 1):
            ax.axhline(sign * limit, color="r", lw=0.8, ls="--")
        saturated = (np.abs(values) >= limit - 1e-9).any(axis=1)
        ax.fill_between(t, -limit, limit, where=saturated, color="r", alpha=0.15, lw=0, label="saturated")
        ax.set_ylabel(name)
        ax.set_xlabel("t (s)")
        ax.legend(fontsize=7)
    for phase_t, phase in trace.transitions:
        for ax in axes.flat:
            ax.axvline(phase_t, color="gray", lw=0.6, alpha=0.6)
        axes[0, 0].annotate(phase, (phase_t, 0), fontsize=6, rotation=90, va="bottom")
    fig.suptitle(title)
    return fig


def plot_jump_heights(trace: ScenarioTrace) -> Figure:
    """Wheel bottoms and body height through the jump, with the 0.10 m requirement."""
    fig, ax = figures.figure(1, 1, width=7.0, height=3.0)
    ax.plot(trace.t, trace.wheel_z[:, 0], label="left wheel bottom")
    ax.plot(trace.t, trace.wheel_z[:, 1], label="right wheel bottom")
    ax.plot(trace.t, trace.body_z, label="body")
    ax.axhline(0.10, color="r", ls="--", lw=0.8, label="0.10 m requirement")
    ax.set(xlabel="t (s)", ylabel="height (m)")
    ax.legend(fontsize=7)
    return fig


def plot_ideal_run(run: scenarios.IdealRun) -> Figure:
    """Pitch and wheel torque of the ideal robot under the analytic LQR."""
    fig, axes = figures.figure(1, 2, width=10.0, height=3.0)
    t = np.arange(run.states.shape[0]) * run.dt
    axes[0].plot(t, np.degrees(run.states[:, 2]))
    axes[1].plot(t, run.torques)
    for ax, ylabel in zip(axes, ("pitch (deg)", "T (N m)"), strict=True):
        ax.set(xlabel="t (s)", ylabel=ylabel)
    fig.suptitle("ideal robot under the analytic LQR")
    return fig


# --------------------------------------------------------------------------- experiments
@experiment(
    "balance-recovery",
    summary="LQR balance from a 10 deg forward tilt (sensor-based estimate)",
    expected="|theta| < 0.5 deg and |xd| < 0.02 m/s within 3 s",
    params=_params(initial_tilt_deg=Param(10.0, "initial forward tilt, deg", -30.0, 30.0)),
)
def _balance_recovery(ctx: Context) -> dict:
    tilt = ctx.params["initial_tilt_deg"]
    metrics = _scenario(ctx, functools.partial(scenarios.balance_recovery, tilt), judge_balance_recovery,
                        f"balance recovery from {tilt:g} deg")
    if ctx.plots:  # the loop's margins beside the design's: files, not metrics (a sweep measures none)
        write_margins(ctx, loop_margins.balance_loop(ctx.params, MARGINS_SHORT, ctx.seed),
                      f"balance: loop broken at {loop_margins.BROKEN_AT!r} (whole robot)")
    return metrics


@experiment(
    "velocity-tracking",
    summary="speed reference 0 -> 1 m/s -> 0 through the LQR's moving set-point",
    expected="95 % of {speed:g} m/s within 2 s; steady-state error < 2 %",
    params=_params(speed=Param(1.0, "cruise speed, m/s", -2.0, 2.0)),
)
def _velocity_tracking(ctx: Context) -> dict:
    speed = float(ctx.params["speed"])
    return _scenario(ctx, functools.partial(scenarios.velocity_tracking, speed), judge_velocity_tracking,
                     f"velocity tracking 0 -> {speed:g} m/s -> 0")


@experiment(
    "turn",
    summary="turn in place by the yaw PD's differential wheel torque (the steering model)",
    expected="{turn_deg:g} deg +- 3 deg within 2 s",
    params=_params(turn_deg=Param(90.0, "turn angle, deg (positive: left)", -360.0, 360.0)),
)
def _turn(ctx: Context) -> dict:
    turn = ctx.params["turn_deg"]
    return _scenario(ctx, functools.partial(scenarios.turn, turn), judge_turn, f"turn {turn:g} deg in place")


@experiment(
    "height-change",
    summary="leg height crouched (190 deg) -> extended (250 deg) -> crouched while balancing",
    expected="full stroke each way within 1.5 s without falling",
    params=_params(),
)
def _height_change(ctx: Context) -> dict:
    return _scenario(ctx, scenarios.height_change, judge_height_change, "height change across the stroke")


@experiment(
    "roll-leveling",
    summary="one wheel on a 4 cm step: the virtual roll torque levels the body",
    expected="body roll < 1 deg in steady state",
    params=_params(step_m=Param(0.04, "step height under the left wheel, m", 0.0, 0.12)),
)
def _roll_leveling(ctx: Context) -> dict:
    step = float(ctx.params["step_m"])
    return _scenario(ctx, functools.partial(scenarios.roll_leveling, step), judge_roll_leveling,
                     f"roll leveling, left wheel on a {step * 100:g} cm step")


@experiment(
    "push-recovery",
    summary="largest horizontal push (0.1 s on the body) recovered, found by bisection",
    expected="a recovered impulse reported with its bracket",
    params=_params(push_duration_s=Param(0.1, "push length, s", 0.01, 0.5),
                   max_impulse=Param(30.0, "upper end of the search, N s", 1.0, 200.0)),
)
def _push_recovery(ctx: Context) -> dict:
    def search(video_dir=None, **setup):
        return scenarios.push_recovery(float(ctx.params["push_duration_s"]), float(ctx.params["max_impulse"]),
                                       bisections=4 if ctx.short else 8, video_dir=video_dir, **setup)

    best, metrics = search(_video_dir(ctx), **_setup(ctx))
    low = metrics["max_recovered_impulse_Ns"]
    if best is not None and low > 0 and ctx.plots:  # a sweep's runs draw nothing
        ctx.savefig(plot_states(best, f"largest recovered push: {low:.2f} N s"), "states.png")
    other = _with_other(ctx, judge_push_recovery, lambda **s: search(**s)[1])
    return {**judge_push_recovery(metrics).as_metrics(), **metrics, **other}


@experiment(
    "jump",
    summary="jump state machine: crouch, thrust at full hip torque, retract, flight, land, balance",
    expected="both wheels >= 0.10 m up at apex, lands, balanced within 2 s",
    params=_params(thrust_torque=Param(0.0, "hip torque during thrust, N m (0: the robot's motor limit)", 0.0, 1e4)),
)
def _jump(ctx: Context) -> dict:
    thrust = float(ctx.params["thrust_torque"]) or None
    return _scenario(ctx, functools.partial(scenarios.jump, thrust), judge_jump, "jump",
                     also=lambda trace: ctx.savefig(plot_jump_heights(trace), "heights.png"))


@experiment(
    "robustness",
    summary="balance recovery with nominal gains on perturbed robots (mass +-30 %, CoM +-2 cm)",
    expected="every variant balances (failures reported with why)",
    params={"initial_tilt_deg": Param(10.0, "initial forward tilt, deg", -30.0, 30.0),
            "ground_truth": COMMON["ground_truth"], "mjcf": MJCF, **IMPERFECTIONS},
)
def _robustness(ctx: Context) -> dict:
    setup = {k: v for k, v in _setup(ctx).items() if k in ("ground_truth", "mjcf", "imperfections", "seed")}
    traces, metrics = scenarios.robustness(ctx.params["initial_tilt_deg"], video_dir=_video_dir(ctx), **setup)
    for name, trace in traces.items():
        if ctx.plots:  # a sweep's runs draw nothing
            ctx.savefig(plot_states(trace, f"robustness: {name}"),
                        f"states_{name.replace(' ', '_').replace('%', 'pct')}.png")
    name, other = _other(ctx)
    other = {k: v for k, v in other.items() if k in setup}
    _, other_metrics = scenarios.robustness(ctx.params["initial_tilt_deg"], **other)
    return {**judge_robustness(metrics).as_metrics(), **metrics,
            name: {**judge_robustness(other_metrics).as_metrics(), "imperfections": other["imperfections"].as_dict(),
                   **other_metrics}}


@experiment(
    "lqr-cost",
    summary="ideal robot (rigid massless legs): realised LQR cost vs x0' S x0; analytic vs MuJoCo-linearization design",
    expected="realised cost within 5 % of the Riccati prediction",
    params={"initial_tilt_deg": Param(2.0, "initial tilt, deg (small: the linear regime)", 0.1, 10.0),
            "q_x": COMMON["q_x"], "q_xd": COMMON["q_xd"], "q_theta": COMMON["q_theta"],
            "q_thetad": COMMON["q_thetad"], "r": COMMON["r"], "mjcf": MJCF},
)
def _lqr_cost(ctx: Context) -> dict:
    weights = {k: float(ctx.params[k]) for k in scenarios.WEIGHTS}
    run, metrics = scenarios.lqr_cost(ctx.params["initial_tilt_deg"], duration=6.0 if ctx.short else 10.0,
                                      weights=weights, mjcf=ctx.params["mjcf"])
    if ctx.plots:  # a sweep's runs draw nothing (nor measure the loop's margins, files beside the metrics)
        ctx.savefig(plot_ideal_run(run), "ideal_lqr.png")
        write_margins(ctx, loop_margins.ideal_loop(ctx.params, MARGINS_SHORT, ctx.seed),
                      f"ideal robot: loop broken at {loop_margins.BROKEN_AT!r}")
    return {**judge_lqr_cost(metrics).as_metrics(), **metrics}
