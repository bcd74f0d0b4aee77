"""The biped's balance tuning and robustness maps: two experiments that ``crossdyn tune`` runs like any other.

A run is one closed-loop balance recovery of the (perturbed) biped with a controller designed from the
LQR weights ``Q = diag(q_x, q_xd, q_theta, q_thetad)``, ``R = r``, scored on settling time (from the tilt
or the push until ``|theta| < 0.5 deg`` and ``|xd| < 0.02 m/s`` hold to the end, s), overshoot (the
largest pitch past upright on the other side from the largest excursion, deg), control effort
(``integral (T_left + T_right)^2 dt``, (N m)^2 s), torque saturation and whether it holds (up and no
longer rolling at the end).  Its result, the first word of ``measured``, is ``ok``, ``saturated``
(settled, but a wheel hit its limit), ``unsettled``, ``fell``, ``diverged`` or ``push-failed`` (held,
but the optional push check after it was not recovered); a design that does not stabilize is an error.

- ``biped-balance-tune`` passes when the run is ``ok``.  Its declared tune: a log-uniform Latin
  hypercube over the five weights, the best the fastest-settling passing run with no more effort
  than the defaults.
- ``biped-robustness-map`` passes when the robot holds.  Its declared tune: a grid of CoM offset x
  push, from upright.

Either steps a batch of runs together on MuJoCo's batch
(:func:`~crossdyn.experiments.biped.closed_loop.simulate_many`), each row the row of that run alone.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core.limits import DURATION_MAX
from ..core.registry import Param, batched, experiment
from ..core.runner import Context
from .closed_loop import make_controller, simulate_many
from .closed_loop import simulate_scenario as simulate
from .control import COMMON, plot_states
from .imperfections import PARAMS as IMPERFECTION_PARAMS
from .imperfections import Imperfections
from .model import nominal_params
from .scenarios import (
    ALPHA_NOMINAL,
    CONTROL_PERIOD,
    PUSH_START,
    WEIGHTS,
    Setup,
    balance_scenario,
    balanced,
    common_metrics,
    controller_for,
    holding,
    imperfections_for,
    push_recovered,
    push_scenario,
    robot,
    settling_time,
    stance_height,
)

# The gallery's heading for these experiments, and the docs/derivations page of the controller they tune.
GALLERY_HEADING = "Wheel-legged biped: closed loops"
DERIVATION_PAGE = "biped-control"

__all__ = ["BALANCE", "ROBUSTNESS", "PARAMS", "RANGES", "MAP_AXES", "GAINS"]

BALANCE, ROBUSTNESS = "biped-balance-tune", "biped-robustness-map"

# The weights' declared ranges, drawn log-uniformly: about a decade or more either side of the
# defaults, wide enough to hold both sluggish and twitchy designs.
RANGES = {"q_x": (1.0, 1000.0), "q_xd": (0.1, 300.0), "q_theta": (10.0, 3000.0), "q_thetad": (0.1, 30.0),
          "r": (0.1, 10.0)}
# The declared map: mass x tilt holds everywhere in range with the default gains, so CoM offset x push
# (from upright, as push-recovery) is the map that shows an edge.
MAP_AXES = {"com_offset_x": "-0.04,-0.02,0,0.02,0.04", "push_impulse_Ns": "5,10,15,20,25,30"}
GAINS = ("k_x", "k_xd", "k_theta", "k_thetad")  # the gains at stance, on [x, xd, theta, thetad]

PUSH_LENGTH = 0.1  # s, as push-recovery's
PARAMS = {
    **{w: COMMON[w] for w in WEIGHTS}, "body_mass_scale": COMMON["body_mass_scale"],
    "com_offset_x": COMMON["com_offset_x"], "initial_tilt_deg": Param(10.0, "initial forward tilt, deg", -30.0, 30.0),
    "push_impulse_Ns": Param(0.0, f"forward push on the body over {PUSH_LENGTH} s at {PUSH_START} s, N s", 0.0, 200.0),
    **IMPERFECTION_PARAMS,
    "duration_s": Param(4.0, "simulated time, s", PUSH_START + PUSH_LENGTH, DURATION_MAX),
    "push_check_Ns": Param(0.0, "also require recovery from this push, N s (0: no push run)", 0.0, 200.0),
    "mjcf": COMMON["mjcf"],
}


@functools.lru_cache(maxsize=8)
def _robot(body_mass_scale: float, com_offset_x: float, mjcf: str, floor: Imperfections):
    """The perturbed robot with the imperfections' floor and payload, compiled once per process."""
    return robot(Setup(body_mass_scale=body_mass_scale, com_offset_x=com_offset_x, mjcf=mjcf, imperfections=floor))


@functools.lru_cache(maxsize=64)
def _gains(weights: tuple, mjcf: str):
    """The gains for ``weights`` (sorted ``(name, value)`` pairs), designed once per process; each run gets a
    fresh controller built from them (a controller keeps state).  ParameterError: no stabilizing design."""
    return controller_for(Setup(weights=dict(weights), mjcf=mjcf)).gains


def _controller(weights: dict, mjcf: str):
    return make_controller(nominal_params(mjcf), CONTROL_PERIOD, gains=_gains(tuple(sorted(weights.items())), mjcf))


@dataclass(frozen=True)
class _Run:
    """A run ready to simulate: its robot, scenario and controller, imperfections and seed, when settling is
    measured from (the tilt, or the end of the push, s), and push-recovery's scenario to check after it (or None)."""

    model: Any
    scenario: Any
    controller: Any
    imperfections: list
    seed: int
    start: float
    check: Any
    gains: np.ndarray  # (4,) at stance
    weights: dict
    mjcf: str


def _ready(ctx: Context) -> _Run:
    p, mjcf = ctx.params, str(ctx.params["mjcf"])
    weights = {w: float(p[w]) for w in WEIGHTS}
    ctrl = _controller(weights, mjcf)
    imperfections = Imperfections(**{k: p[k] for k in IMPERFECTION_PARAMS})
    floor = Imperfections(friction=imperfections.friction, slope_deg=imperfections.slope_deg,
                          bump_m=imperfections.bump_m, payload_kg=imperfections.payload_kg)
    setup = Setup(body_mass_scale=p["body_mass_scale"], com_offset_x=p["com_offset_x"], mjcf=mjcf,
                  imperfections=imperfections, seed=ctx.seed)
    sc, start = balance_scenario(p["initial_tilt_deg"], p["duration_s"], mjcf), 0.0
    if p["push_impulse_Ns"] > 0:  # settling counts from the push's end
        sc = replace(sc, push=(PUSH_START, p["push_impulse_Ns"] / PUSH_LENGTH, PUSH_LENGTH))
        start = PUSH_START + PUSH_LENGTH
    check = push_scenario(p["push_check_Ns"], PUSH_LENGTH, mjcf=mjcf) if p["push_check_Ns"] > 0 else None
    return _Run(_robot(float(p["body_mass_scale"]), float(p["com_offset_x"]), mjcf, floor), sc, ctrl,
                imperfections_for(setup), setup.seed, start, check,
                ctrl.gains.schedule(stance_height(ALPHA_NOMINAL, mjcf)).ravel(), weights, mjcf)


def _score(trace, start: float) -> tuple[str, dict]:
    """A balance trace's result (see the module docstring) and metrics."""
    if trace.t.size == 0:
        return "diverged", {}
    common = common_metrics(trace)
    settle = settling_time(trace.t, balanced(trace), start) if not trace.fell else math.inf
    pitch = np.degrees(trace.true_pitch)
    peak = int(np.argmax(np.abs(pitch)))
    overshoot = max(0.0, float(np.max(-np.sign(pitch[peak]) * pitch[peak:])))
    total = trace.wheel_torque.sum(axis=1)
    metrics = {"settling_time_s": settle, "overshoot_deg": overshoot,
               "max_tilt_deg": common["max_tilt_deg"], "excursion_m": float(np.abs(trace.true_x).max()),
               "effort_N2m2s": float(np.sum(total**2) * CONTROL_PERIOD),
               **{k: common[k] for k in ("max_wheel_torque", "wheel_saturation_fraction", "hip_saturation_fraction")},
               "held": holding(trace)}
    if trace.diverged or not all(np.isfinite(v) for k, v in metrics.items() if k != "settling_time_s"):
        return "diverged", metrics
    if trace.fell:
        return "fell", metrics
    if not np.isfinite(settle):
        return "unsettled", metrics
    return ("saturated" if common["wheel_saturation_fraction"] > 0 else "ok"), metrics


def _result(ctx: Context, run: _Run, trace, score: tuple[str, dict], pushed, passes) -> dict:
    """The run's metrics from its trace and :func:`_score` (and the push check's trace, or None), judged by
    ``passes(result, held)``."""
    result, scored = score
    metrics: dict[str, Any] = {**dict(zip(GAINS, map(float, run.gains), strict=True)), **scored}
    said = "diverged before its first control step" if not scored else \
        f"settling time {scored['settling_time_s']:.2f} s, effort {scored['effort_N2m2s']:.3f} (N m)^2 s"
    if pushed is not None:
        metrics.update(push_recovered=push_recovered(pushed),
                       push_max_tilt_deg=float(np.degrees(np.abs(pushed.true_pitch)).max()))
        said += f"; a {ctx.params['push_check_Ns']:g} N s push " + \
            ("recovered" if metrics["push_recovered"] else "not recovered")
        result = result if metrics["push_recovered"] else "push-failed"
    if ctx.plots and trace.t.size:
        ctx.savefig(plot_states(trace, f"{result}: balance from {ctx.params['initial_tilt_deg']:g} deg"), "states.png")
    return {"passed": passes(result, bool(scored.get("held"))), "measured": f"{result}, {said}", **metrics}


def _checked(run: _Run, result: str) -> bool:
    """Whether push-recovery's check runs after the balance run: asked for, and the run settled."""
    return run.check is not None and result in ("ok", "saturated")


def _one(ctx: Context, passes) -> dict:
    run = _ready(ctx)
    trace = simulate(run.model, run.scenario, run.controller, imperfections=run.imperfections, seed=run.seed)
    score = _score(trace, run.start)
    pushed = simulate(run.model, run.check, _controller(run.weights, run.mjcf), imperfections=run.imperfections,
                      seed=run.seed) if _checked(run, score[0]) else None
    return _result(ctx, run, trace, score, pushed, passes)


def _batch(contexts: list[Context], passes) -> list:
    """What :func:`_one` gives each context (or raises: that run's error is its result), the runs of one robot
    and duration stepped together, push checks after them."""
    runs: list[Any] = []
    for ctx in contexts:
        try:
            runs.append(_ready(ctx))
        except Exception as exc:  # that run's row says it; the others run
            runs.append(exc)
    ready = {i: run for i, run in enumerate(runs) if isinstance(run, _Run)}
    traces = _many({i: (run, run.scenario, run.controller) for i, run in ready.items()})
    scores = {i: _score(traces[i], run.start) for i, run in ready.items()}
    pushed = _many({i: (run, run.check, _controller(run.weights, run.mjcf)) for i, run in ready.items()
                    if _checked(run, scores[i][0])})
    return [_result(ctx, ready[i], traces[i], scores[i], pushed.get(i), passes) if i in ready else runs[i]
            for i, ctx in enumerate(contexts)]


def _many(todo: dict[int, tuple[_Run, Any, Any]]) -> dict[int, Any]:
    """Traces of ``{i: (run, scenario, controller)}``, the runs of one robot and duration stepped together."""
    groups: dict[tuple, list[int]] = {}
    for i, (run, sc, _) in todo.items():
        groups.setdefault((id(run.model), sc.duration), []).append(i)
    out: dict[int, Any] = {}
    for members in groups.values():
        traces = simulate_many(todo[members[0]][0].model, [todo[i][1] for i in members],
                               [todo[i][0].imperfections for i in members], seeds=[todo[i][0].seed for i in members],
                               controllers=[todo[i][2] for i in members])
        out.update(zip(members, traces, strict=True))
    return out


def _ok(result: str, held: bool) -> bool:
    return result == "ok"


def _holds(result: str, held: bool) -> bool:
    return held


@experiment(BALANCE, summary="one balance recovery scored as the balance LQR's weights are tuned by: settling "
                             "time, effort, overshoot, saturation", expected="ok: settles with no wheel at its limit",
            params=PARAMS, default_tune={
                "vary": [f"{w}={lo:g}:{hi:g}:log" for w, (lo, hi) in RANGES.items()], "minimize": "settling_time_s:log",
                "constraints": ["effort_N2m2s<=defaults"], "ratios_to": "r"})
def balance_tune(ctx: Context) -> dict:
    return _one(ctx, _ok)


@batched(BALANCE)
def _balance_tune_batch(contexts: list[Context]) -> list:
    return _batch(contexts, _ok)


@experiment(ROBUSTNESS, summary="one perturbed balance recovery, one cell of a map of where the balance holds",
            expected="holds: up and no longer rolling at the end",
            params={**PARAMS, "duration_s": Param(6.0, "simulated time, s (a pushed robot rolls back and stops)",
                                                  PUSH_START + PUSH_LENGTH, DURATION_MAX)},
            default_tune={"vary": [f"{k}={v}" for k, v in MAP_AXES.items()], "search": "grid",
                          "fixed": {"initial_tilt_deg": "0"}})
def robustness_map(ctx: Context) -> dict:
    return _one(ctx, _holds)


@batched(ROBUSTNESS)
def _robustness_map_batch(contexts: list[Context]) -> list:
    return _batch(contexts, _holds)
