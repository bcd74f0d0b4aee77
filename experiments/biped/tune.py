"""Gain tuning at scale: sweeps of the balance LQR's weights and robustness maps.

A *sample* is one closed-loop balance-recovery run of the (perturbed) biped with a
controller designed from LQR weights ``Q = diag(q_x, q_xd, q_theta, q_thetad)``, ``R = r``,
scored on settling time (from the tilt or the push until ``|theta| < 0.5 deg`` and
``|xd| < 0.02 m/s`` hold to the end, s), overshoot (the largest pitch past upright on the
other side from the largest excursion, deg), control effort (``integral (T_left + T_right)^2 dt``,
(N m)^2 s), torque saturation, held (up and no longer rolling at the end) and an outcome:
``ok``, ``saturated`` (settled, but a wheel hit its limit), ``unsettled``, ``fell``,
``diverged``, ``invalid`` (no stabilizing design), ``push-failed`` (the optional push check
not recovered) or ``error`` (message in ``detail``).  A failing sample is a recorded
outcome, never a crash.

This module is what is the biped's: its samples, their scoring, the search's objectives,
the choice rule and the plots.  Planning, searching and running them is crossdyn's
generic sweep machinery (:mod:`crossdyn.experiments.core.sweep`): the weight sweeps and
searches are experiment ``biped-balance-tune``, the maps ``biped-robustness-map``, each
declaring its :class:`~crossdyn.experiments.core.sweep.tuning.Tuning`.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from crossdyn.experiments.biped.closed_loop import make_controller, simulate_many
from crossdyn.experiments.biped.closed_loop import simulate_scenario as simulate
from crossdyn.experiments.biped.control import COMMON
from crossdyn.experiments.biped.imperfections import PARAMS as IMPERFECTION_PARAMS
from crossdyn.experiments.biped.imperfections import Imperfections
from crossdyn.experiments.biped.model import nominal_params
from crossdyn.experiments.biped.scenarios import (
    ALPHA_NOMINAL,
    CONTROL_PERIOD,
    DEFAULT_WEIGHTS,
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
from crossdyn.experiments.core import figures as plots
from crossdyn.experiments.core.errors import CrossdynError, ParameterError
from crossdyn.experiments.core.registry import Param
from crossdyn.experiments.core.runner import write_json
from crossdyn.experiments.core.sweep import choice, space
from crossdyn.experiments.core.sweep import run as sweep_run
from crossdyn.experiments.core.sweep import search as searches
from crossdyn.experiments.core.sweep.plots import heat, held_map, holding_region
from crossdyn.experiments.core.sweep.run import SweepResult
from crossdyn.experiments.core.sweep.space import SAMPLES_MAX

_number = choice.number

__all__ = ["Sample", "SweepResult", "WEIGHTS", "DEFAULT_WEIGHTS", "PERTURBATIONS", "RANGES", "DEFAULT_AXES",
           "parse_values", "parse_range", "plan_sweep", "plan_robustness", "evaluate", "sweep",
           "robustness", "holding_region", "best_sample", "weights_from", "SAMPLES_MAX", "finish", "search",
           "SEARCHES", "SAMPLERS", "EFFORT_LEVELS", "TRIALS_MAX", "FAILED_EFFORT", "BALANCE", "ROBUSTNESS"]


# Latin-hypercube ranges, sampled uniformly in log10: about a decade or more
# either side of the defaults, wide enough to hold both sluggish and twitchy designs.
RANGES = {"q_x": (1.0, 1000.0), "q_xd": (0.1, 300.0), "q_theta": (10.0, 3000.0), "q_thetad": (0.1, 30.0),
          "r": (0.1, 10.0)}

PUSH_LENGTH = 0.1  # s, as push-recovery
PERTURBATIONS = {
    "body_mass_scale": COMMON["body_mass_scale"],
    "com_offset_x": COMMON["com_offset_x"],
    "initial_tilt_deg": Param(10.0, "initial forward tilt, deg", -30.0, 30.0),
    "push_impulse_Ns": Param(0.0, f"forward push on the body over {PUSH_LENGTH} s at {PUSH_START} s, N s",
                             0.0, 200.0),
    **IMPERFECTION_PARAMS,
}
NOMINAL = {name: p.default for name, p in PERTURBATIONS.items()}
# The robustness map's axes when none are given: mass x tilt holds everywhere in
# range with the default gains, so CoM offset x push is the map that shows an edge.
DEFAULT_AXES = {"com_offset_x": [-0.04, -0.02, 0.0, 0.02, 0.04],
                "push_impulse_Ns": [5.0, 10.0, 15.0, 20.0, 25.0, 30.0]}

GAINS = ("k_x", "k_xd", "k_theta", "k_thetad")
METRICS = ("outcome", "settling_time_s", "overshoot_deg", "max_tilt_deg", "excursion_m", "effort_N2m2s",
           "max_wheel_torque", "wheel_saturation_fraction", "hip_saturation_fraction", "held", "push_recovered",
           "push_max_tilt_deg", "detail")
KEYS = ("sample", "kind", *WEIGHTS, *PERTURBATIONS, "duration_s", "push_check_Ns", "seed", "mjcf")
COLUMNS = (*KEYS, *GAINS, *METRICS)
FAILED = ("unsettled", "fell", "diverged", "invalid", "push-failed", "error", "crashed", "timed out")


@dataclass(frozen=True)
class Sample:
    """One closed-loop run to do.

    Attributes:
      index: position in the sweep (the CSV's order).
      kind: ``default`` (the hand-picked reference), ``grid``, ``lhs`` or ``map``.
      weights, perturbation: by name (:data:`WEIGHTS`, :data:`PERTURBATIONS`).
      duration: simulated time, s.
      push_check: if > 0, also require recovery from push-recovery's scenario at this impulse, N s.
      seed: seed of the imperfections' noise.
      mjcf: the robot (``""``: the built-in one).
    """

    index: int
    kind: str
    weights: dict = field(hash=False)
    perturbation: dict = field(hash=False)
    duration: float = 4.0
    push_check: float = 0.0
    seed: int = 0
    mjcf: str = ""

    def key(self) -> dict:
        """The CSV columns that identify the sample (compared on resume)."""
        return {"sample": str(self.index), "kind": self.kind, **{k: _fmt(self.weights[k]) for k in WEIGHTS},
                **{k: _fmt(self.perturbation[k]) for k in PERTURBATIONS}, "duration_s": _fmt(self.duration),
                "push_check_Ns": _fmt(self.push_check), "seed": str(self.seed), "mjcf": self.mjcf}

    def imperfections(self) -> Imperfections:
        """The imperfections among the perturbations, each of its field's type (int for counts and delays)."""
        values: dict[str, Any] = {k: type(IMPERFECTION_PARAMS[k].default)(self.perturbation[k])
                                  for k in IMPERFECTION_PARAMS}
        return Imperfections(**values)


def _fmt(value) -> str:
    """CSV text of a value: round-trip floats (repr), lower-case booleans, '' for missing."""
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (float, np.floating, int, np.integer)):
        return repr(float(value))
    return str(value)


# --------------------------------------------------------------------------- parsing NAME=VALUES arguments
def _check_weight(name: str, value: float) -> float:
    if name not in WEIGHTS:
        raise ParameterError(f"unknown LQR weight {name!r}; the weights are {', '.join(WEIGHTS)}")
    return COMMON[name].parse(name, repr(value))


def _check_perturbation(name: str, value: float) -> float:
    if name not in PERTURBATIONS:
        raise ParameterError(f"unknown perturbation {name!r}; the axes are {', '.join(PERTURBATIONS)}")
    param = PERTURBATIONS[name]
    if isinstance(param.default, int) and float(value).is_integer():
        return float(param.parse(name, str(int(value))))  # a whole-number axis (delay, encoder counts)
    return float(param.parse(name, repr(value)))


def parse_values(items: list[tuple[str, str]], kind: str = "weight") -> dict[str, list[float]]:
    """``[("q_theta", "10,100,1000"), ...]`` -> ``{"q_theta": [10.0, 100.0, 1000.0]}``, validated.

    ``kind`` is ``weight`` (LQR weights) or ``perturbation`` (the robustness axes).

    Raises:
      ParameterError: unknown name, repeated name, empty list, a value out of range.
    """
    return space.parse_values(items, _check_weight if kind == "weight" else _check_perturbation)


def parse_range(items: list[tuple[str, str]]) -> dict[str, tuple[float, float]]:
    """``[("q_x", "1:1000")]`` -> ``{"q_x": (1.0, 1000.0)}``: Latin-hypercube bounds, both > 0 (log scale)."""
    return space.parse_bounds(items, _check_weight)


# --------------------------------------------------------------------------- planning
def plan_sweep(samples: int | None = None, grid: dict[str, list[float]] | None = None, seed: int = 0,
               ranges: dict[str, tuple[float, float]] | None = None, duration: float = 4.0,
               initial_tilt_deg: float = 10.0, push_check: float = 0.0, mjcf: str = "") -> list[Sample]:
    """The samples of a weight sweep; sample 0 is always the hand-picked defaults.

    Args:
      samples: number of Latin-hypercube draws (log-uniform within ``ranges``).
      grid: instead, every combination of these values; weights not named stay at their defaults.
      seed: seed of the Latin hypercube.
      ranges: per-weight ``(low, high)`` overriding :data:`RANGES`.
      duration: simulated time of each run, s.
      initial_tilt_deg: the balance-recovery tilt, deg.
      push_check: also require recovery from this push, N s (0: no push run).
      mjcf: the robot (``""``: the built-in one).

    Raises:
      ParameterError: both or neither of ``samples`` and ``grid``; a bad value.
    """
    if (samples is None) == (grid is None):
        raise ParameterError("give either --samples N (Latin hypercube) or --grid NAME=VALUES, not both")
    nominal_params(mjcf)  # a missing file or a broken contract is refused before anything runs
    perturbation = {**NOMINAL, "initial_tilt_deg": _check_perturbation("initial_tilt_deg", initial_tilt_deg)}
    if duration <= PUSH_START + PUSH_LENGTH:
        raise ParameterError(f"duration {duration} s is too short for a closed-loop run (> 0.6 s)")

    def sample(i, kind, weights):
        return Sample(i, kind, {**DEFAULT_WEIGHTS, **weights}, perturbation, float(duration), float(push_check),
                      seed=seed, mjcf=mjcf)

    plan = [sample(0, "default", {})]
    if grid is not None:
        return plan + [sample(i + 1, "grid", cell) for i, cell in enumerate(space.product(grid))]
    assert samples is not None  # exactly one of samples and grid, checked above
    bounds = {**RANGES, **(ranges or {})}
    draws = space.log_hypercube({w: bounds[w] for w in WEIGHTS}, samples, seed)
    return plan + [sample(i + 1, "lhs", weights) for i, weights in enumerate(draws)]


def plan_robustness(weights: dict[str, float], axes: dict[str, list[float]], duration: float = 4.0, seed: int = 0,
                    mjcf: str = "") -> list[Sample]:
    """Every combination of two perturbation axes, for one set of LQR weights.

    Perturbations not on an axis stay nominal; a map with a push axis but no tilt axis
    starts upright, as push-recovery does.  Every sample draws its noise from ``seed``.

    Raises:
      ParameterError: not exactly two axes; an unknown weight.
    """
    if len(axes) != 2:
        raise ParameterError(f"a robustness map needs exactly two --axis, got {len(axes)}")
    nominal_params(mjcf)  # a missing file or a broken contract is refused before anything runs
    weights = {**DEFAULT_WEIGHTS, **{k: _check_weight(k, v) for k, v in weights.items()}}
    base = dict(NOMINAL)
    if "push_impulse_Ns" in axes and "initial_tilt_deg" not in axes:
        base["initial_tilt_deg"] = 0.0
    return [Sample(i, "map", dict(weights), {**base, **cell}, float(duration), seed=seed, mjcf=mjcf)
            for i, cell in enumerate(space.product(axes, "the map", "cells"))]


# --------------------------------------------------------------------------- one sample
def _score(trace, start: float) -> dict:
    """Metrics of one balance trace (see the module docstring)."""
    if trace.t.size == 0:  # diverged before the first control step
        return {"outcome": "diverged"}
    common = common_metrics(trace)
    settle = settling_time(trace.t, balanced(trace), start) if not trace.fell else math.inf
    pitch = np.degrees(trace.true_pitch)
    peak = int(np.argmax(np.abs(pitch)))
    overshoot = max(0.0, float(np.max(-np.sign(pitch[peak]) * pitch[peak:])))
    total = trace.wheel_torque.sum(axis=1)
    metrics = {"settling_time_s": settle, "overshoot_deg": overshoot, "max_tilt_deg": common["max_tilt_deg"],
               "excursion_m": float(np.abs(trace.true_x).max()),
               "effort_N2m2s": float(np.sum(total**2) * CONTROL_PERIOD),
               **{k: common[k] for k in ("max_wheel_torque", "wheel_saturation_fraction", "hip_saturation_fraction")},
               "held": holding(trace)}
    if trace.diverged or not all(np.isfinite(v) for k, v in metrics.items() if k != "settling_time_s"):
        metrics["outcome"] = "diverged"
    elif trace.fell:
        metrics["outcome"] = "fell"
    elif not np.isfinite(settle):
        metrics["outcome"] = "unsettled"
    elif common["wheel_saturation_fraction"] > 0:
        metrics["outcome"] = "saturated"
    else:
        metrics["outcome"] = "ok"
    return metrics


@functools.lru_cache(maxsize=8)
def _robot(body_mass_scale: float, com_offset_x: float, mjcf: str = "", imperfections: Imperfections | None = None):
    """The perturbed robot with the imperfections' floor and payload, compiled once per process."""
    return robot(Setup(body_mass_scale=body_mass_scale, com_offset_x=com_offset_x, mjcf=mjcf,
                       imperfections=imperfections or Imperfections()))


@functools.lru_cache(maxsize=64)
def _gains(weights: tuple, mjcf: str = ""):
    """The gains for ``weights`` (sorted ``(name, value)`` pairs), designed once per process; each run gets a
    fresh controller built from them (a controller keeps state).  ParameterError: no stabilizing design."""
    return controller_for(Setup(weights=dict(weights), mjcf=mjcf)).gains


def _controller(weights: dict, mjcf: str = ""):
    """A fresh controller for the robot ``mjcf`` with the (cached) gains for ``weights``."""
    return make_controller(nominal_params(mjcf), CONTROL_PERIOD, gains=_gains(tuple(sorted(weights.items())), mjcf))


@dataclass(frozen=True)
class _Ready:
    """A sample's run, ready to simulate."""

    model: Any
    scenario: Any
    controller: Any
    imperfections: list
    seed: int
    start: float  # s: when settling is measured from (the tilt, or the end of the push)


def _guarded(row: dict, step: Callable[[], Any]) -> Any:
    """``step()``, or None with ``row`` marked ``error`` (one bad sample must not lose a sweep)."""
    try:
        return step()
    except CrossdynError as exc:
        row.update(outcome="error", detail=str(exc))
    except Exception as exc:  # the message says what happened
        row.update(outcome="error", detail=f"{type(exc).__name__}: {exc}")
    return None


def _ready(sample: Sample) -> tuple[dict[str, str], _Ready | None]:
    """The sample's row so far (its key, the gains) and its run, or None with the row's outcome set."""
    row = {**sample.key(), **{k: "" for k in (*GAINS, *METRICS)}}
    try:
        ctrl = _controller(sample.weights, sample.mjcf)
    except ParameterError as exc:
        row.update(outcome="invalid", detail=str(exc))
        return row, None

    def build() -> _Ready:
        p = sample.perturbation
        gains = ctrl.gains.schedule(stance_height(ALPHA_NOMINAL, sample.mjcf)).ravel()
        row.update(zip(GAINS, (_fmt(k) for k in gains), strict=True))
        imperfections = sample.imperfections()
        setup = Setup(body_mass_scale=p["body_mass_scale"], com_offset_x=p["com_offset_x"], mjcf=sample.mjcf,
                      imperfections=imperfections, seed=sample.seed)
        floor = Imperfections(friction=imperfections.friction, slope_deg=imperfections.slope_deg,
                              bump_m=imperfections.bump_m, payload_kg=imperfections.payload_kg)
        model = _robot(float(p["body_mass_scale"]), float(p["com_offset_x"]), sample.mjcf, floor)
        sc = balance_scenario(p["initial_tilt_deg"], sample.duration, sample.mjcf)
        start = 0.0
        if p["push_impulse_Ns"] > 0:
            start = PUSH_START + PUSH_LENGTH
            sc = replace(sc, push=(PUSH_START, p["push_impulse_Ns"] / PUSH_LENGTH, PUSH_LENGTH))
        return _Ready(model, sc, ctrl, imperfections_for(setup), setup.seed, start)

    return row, _guarded(row, build)


def _pushing(sample: Sample, metrics: dict) -> bool:
    """Whether the sample also runs push-recovery's scenario: asked for, and the balance run held."""
    return sample.push_check > 0 and metrics["outcome"] in ("ok", "saturated")


def _pushed(metrics: dict, trace) -> dict:
    """``metrics`` with the push-recovery run's (``trace``) verdict."""
    metrics["push_recovered"] = push_recovered(trace)
    metrics["push_max_tilt_deg"] = float(np.degrees(np.abs(trace.true_pitch)).max())
    if not metrics["push_recovered"]:
        metrics["outcome"] = "push-failed"
    return metrics


def evaluate(sample: Sample | sweep_run.Batch) -> dict[str, str]:
    """Run one sample and return its CSV row (text, deterministic; no timings).

    Model and gains come from per-process caches.  A :class:`~crossdyn.experiments.core.sweep.run.Batch`
    of samples is run by :func:`evaluate_batch` (a list of rows).
    """
    if isinstance(sample, sweep_run.Batch):
        return evaluate_batch(sample)  # type: ignore[return-value]
    row, run = _ready(sample)
    if run is None:
        return row

    def simulated() -> dict:
        metrics = _score(simulate(run.model, run.scenario, run.controller, imperfections=run.imperfections,
                                  seed=run.seed), run.start)
        if _pushing(sample, metrics):
            _pushed(metrics, simulate(run.model, push_scenario(sample.push_check, PUSH_LENGTH, mjcf=sample.mjcf),
                                      _controller(sample.weights, sample.mjcf), imperfections=run.imperfections,
                                      seed=run.seed))
        return metrics

    metrics = _guarded(row, simulated)
    if metrics is not None:
        row.update({k: _fmt(v) for k, v in metrics.items()})
    return row


def evaluate_batch(batch: sweep_run.Batch) -> list[dict[str, str]]:
    """Rows of a batch of samples, each the row :func:`evaluate` gives that sample alone.

    The runs of one robot and duration are stepped together on MuJoCo's batch
    (:func:`~crossdyn.experiments.biped.closed_loop.simulate_many`), push checks after them;
    if that fails, each sample runs alone instead.
    """
    samples: list[Sample] = list(batch.jobs)
    built = [_ready(s) for s in samples]
    runs: dict[int, _Ready] = {i: run for i, (_, run) in enumerate(built) if run is not None}
    ready = list(runs)
    try:
        traces = _many({i: (runs[i], runs[i].scenario, runs[i].controller) for i in ready})
        metrics = {i: _score(traces[i], runs[i].start) for i in ready}
        pushing = [i for i in ready if _pushing(samples[i], metrics[i])]
        pushed = _many({i: (runs[i], push_scenario(samples[i].push_check, PUSH_LENGTH, mjcf=samples[i].mjcf),
                            _controller(samples[i].weights, samples[i].mjcf)) for i in pushing})
        for i in pushing:
            _pushed(metrics[i], pushed[i])
    except Exception:  # whatever went wrong, each sample alone says it in its own row
        return [evaluate(s) for s in samples]
    rows = [row for row, _ in built]
    for i in ready:
        rows[i].update({k: _fmt(v) for k, v in metrics[i].items()})
    return rows


def _many(todo: dict[int, tuple[_Ready, Any, Any]]) -> dict[int, Any]:
    """Traces of ``{i: (run, scenario, controller)}``, the runs of one robot and duration stepped together."""
    groups: dict[tuple, list[int]] = {}
    for i, (run, sc, _) in todo.items():
        groups.setdefault((id(run.model), sc.duration), []).append(i)
    out: dict[int, Any] = {}
    for members in groups.values():
        model = todo[members[0]][0].model
        traces = simulate_many(model, [todo[i][1] for i in members], [todo[i][0].imperfections for i in members],
                               seeds=[todo[i][0].seed for i in members], controllers=[todo[i][2] for i in members])
        out.update(zip(members, traces, strict=True))
    return out


def _warm() -> None:
    """A sweep worker's warm-up: compile the nominal robot once."""
    _robot(NOMINAL["body_mass_scale"], NOMINAL["com_offset_x"])


def _failed(row: dict) -> bool:
    return row["outcome"] in FAILED


_PRELOAD = ("crossdyn.experiments.biped.tune",)  # what a fork server imports before forking workers


# --------------------------------------------------------------------------- choosing and showing
def best_sample(rows: list[dict]) -> dict | None:
    """The fastest-settling ``ok`` sample using no more effort than the defaults (sample 0), else the
    fastest-settling ``ok`` one; None if none is ``ok``.  Ties go to the lower effort."""
    return choice.best_within_reference(rows, "settling_time_s", "effort_N2m2s")


_COLORS = {"ok": "tab:green", "saturated": "tab:orange", "unsettled": "tab:purple", "fell": "tab:red",
           "diverged": "black", "push-failed": "tab:pink"}


def _plot_pareto(rows: list[dict], best: dict | None, path: Path) -> None:
    from matplotlib import ticker

    fig, ax = plots.figure(1, 1, width=7.0, height=4.5)
    finite = [r for r in rows if np.isfinite(_number(r, "settling_time_s"))]
    for outcome in _COLORS:
        pts = [r for r in finite if r["outcome"] == outcome]
        if pts:
            ax.scatter([_number(r, "effort_N2m2s") for r in pts], [_number(r, "settling_time_s") for r in pts], s=18,
                       color=_COLORS[outcome], label=f"{outcome} ({len(pts)})", alpha=0.8)
    front = choice.pareto_front([r for r in rows if r["outcome"] == "ok"], "settling_time_s", "effort_N2m2s")
    if front:
        ax.step([_number(r, "effort_N2m2s") for r in front], [_number(r, "settling_time_s") for r in front],
                where="post", color="tab:green", lw=1.0, label="Pareto front (ok)")
    default = next((r for r in rows if r["kind"] == "default"), None)
    for row, marker, label in ((default, "*", "defaults"), (best, "o", "chosen")):
        if row is not None and np.isfinite(_number(row, "settling_time_s")):
            ax.scatter([_number(row, "effort_N2m2s")], [_number(row, "settling_time_s")], s=160, marker=marker,
                       facecolors="none", edgecolors="k", linewidths=1.5, label=label)
    other = len(rows) - len(finite)
    ax.set_xscale("log")
    # Labels at 1, 2, 5 x 10^k: the default labels every minor tick of a span under a decade, overlapping.
    ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_xlabel("control effort  integral T^2 dt  ((N m)^2 s)")
    ax.set_ylabel("settling time (s)")
    ax.set_title(f"{len(rows)} samples; {other} never settled (unsettled, fell, diverged, invalid) not shown")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig.savefig(path, dpi=110, bbox_inches="tight")


def _plot_weights(rows: list[dict], path: Path) -> None:
    """Settling time against each weight (log scale): which weights matter."""
    fig, axes = plots.figure(1, len(WEIGHTS), width=14.0, height=3.0, sharey=True)
    for ax, w in zip(axes, WEIGHTS, strict=False):
        for outcome, color in _COLORS.items():
            pts = [r for r in rows if r["outcome"] == outcome and np.isfinite(_number(r, "settling_time_s"))]
            ax.scatter([_number(r, w) for r in pts], [_number(r, "settling_time_s") for r in pts], s=10, color=color)
        ax.axvline(DEFAULT_WEIGHTS[w], color="k", ls=":", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel(w)
    axes[0].set_ylabel("settling time (s)")
    fig.suptitle("settling time vs each LQR weight (dotted: default; colours as the Pareto plot)")
    fig.savefig(path, dpi=110, bbox_inches="tight")


def _plot_heatmap(rows: list[dict], grid: dict[str, list[float]] | None, path: Path) -> bool:
    """Settling time and effort over two weights (False if there are not two varying weights).

    A grid uses its first two swept weights (the best over the others per cell); a Latin
    hypercube bins the two weights settling time depends on most (rank correlation) into 6 x 6 cells.
    """
    ok = [r for r in rows if r["kind"] != "default"]
    xs: list[float] | np.ndarray  # a grid's values, or a hypercube's bin centres
    ys: list[float] | np.ndarray
    cell: Callable[[dict], tuple[int, ...]]  # a row's (i, j) cell
    if grid is not None:
        axes = [w for w in grid if len(grid[w]) > 1][:2]
        if len(axes) < 2:
            return False
        xs, ys = sorted(grid[axes[0]]), sorted(grid[axes[1]])
        xi = {_fmt(v): i for i, v in enumerate(xs)}
        yi = {_fmt(v): j for j, v in enumerate(ys)}
        cell = lambda r: (xi[r[axes[0]]], yi[r[axes[1]]])  # noqa: E731
    else:
        from scipy.stats import spearmanr

        finite = [r for r in ok if np.isfinite(_number(r, "settling_time_s"))]
        if len(finite) < 4:
            return False
        t = [_number(r, "settling_time_s") for r in finite]
        score = {w: abs(spearmanr([_number(r, w) for r in finite], t).statistic) for w in WEIGHTS}
        axes = sorted(WEIGHTS, key=lambda w: -np.nan_to_num(score[w]))[:2]
        edges = [np.geomspace(min(_number(r, w) for r in ok), max(_number(r, w) for r in ok) * (1 + 1e-12), 7)
                 for w in axes]
        xs, ys = (np.sqrt(e[1:] * e[:-1]) for e in edges)  # geometric bin centres
        cell = lambda r: tuple(int(np.searchsorted(e, _number(r, w), "right") - 1)  # noqa: E731
                               for e, w in zip(edges, axes, strict=False))
    settle = np.full((len(xs), len(ys)), np.nan)
    effort = np.full((len(xs), len(ys)), np.nan)
    for r in ok:
        if r["outcome"] not in ("ok", "saturated"):
            continue
        i, j = cell(r)
        if not settle[i, j] <= _number(r, "settling_time_s"):  # NaN or worse: keep the best per cell
            settle[i, j], effort[i, j] = _number(r, "settling_time_s"), _number(r, "effort_N2m2s")
    fig, (a1, a2) = plots.figure(1, 2, width=12.0, height=4.5)
    how = "best per cell" + ("" if grid is not None else ", binned Latin-hypercube samples")
    def text(values):
        return [[f"{v:.2f}" if np.isfinite(v) else "" for v in col] for col in values]

    heat(a1, fig, xs, ys, settle, axes[0], axes[1], f"settling time (s), {how}; blank: none settled",
          annotate=text(settle))
    heat(a2, fig, xs, ys, effort, axes[0], axes[1], "effort of that sample ((N m)^2 s)", annotate=text(effort))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return True


def sweep(out: Path, *, samples: int | None = None, grid: dict[str, list[float]] | None = None, seed: int = 0,
          ranges: dict[str, tuple[float, float]] | None = None, duration: float = 4.0,
          initial_tilt_deg: float = 10.0, push_check: float = 0.0, workers: int = 1,
          scheduler: str | None = None, progress: bool = False, plots_: bool = True, mjcf: str = "",
          timeout: float | None = None, batch: bool = True) -> SweepResult:
    """Sweep the balance LQR weights (see :func:`plan_sweep`) into ``out``: experiment ``biped-balance-tune``.

    Writes ``out/samples.csv``, ``out/timings.csv``, ``out/best.json`` (the chosen sample
    next to the defaults) and, with ``plots_``, ``pareto.png``, ``weights.png`` and
    ``heatmap.png``.  ``batch``: samples go to the workers a batch at a time (not with ``timeout``).
    """
    plan = plan_sweep(samples, grid, seed, ranges, duration, initial_tilt_deg, push_check, mjcf)
    return _tune(BALANCE, out, plan, workers=workers, scheduler=scheduler, progress=progress, timeout=timeout,
                 batch=batch, options={"plots_": plots_, "grid": grid})


def _tune(name: str, out: Path, plan, **kwargs) -> SweepResult:
    from crossdyn.experiments.core.sweep.experiment import tune

    return tune(name, Path(out), plan=plan, **kwargs)


def finish(out: Path, result: SweepResult, plots_: bool = True, grid: dict[str, list[float]] | None = None) -> None:
    """Choose the best sample (:func:`best_sample`); write ``best.json`` and the plots of a weight sweep or search."""
    result.best = best_sample(result.rows)
    default = result.rows[0]
    result.summary = {
        "chosen": _summary(result.best) if result.best else None,
        "defaults": _summary(default),
        "rule": "fastest-settling 'ok' sample using no more effort than the defaults",
        "outcomes": result.counts(),
    }
    write_json(out / "best.json", result.summary)
    if plots_:
        _plot_pareto(result.rows, result.best, out / "pareto.png")
        _plot_weights(result.rows, out / "weights.png")
        _plot_heatmap(result.rows, grid, out / "heatmap.png")


def _summary(row: dict) -> dict:
    """A row as JSON numbers: weights, gains at stance, metrics."""
    return {"sample": int(row["sample"]), "weights": {w: _number(row, w) for w in WEIGHTS},
            "gains_at_stance": [_number(row, k) for k in GAINS], "outcome": row["outcome"],
            **{k: _number(row, k) for k in ("settling_time_s", "overshoot_deg", "effort_N2m2s", "max_wheel_torque",
                                           "wheel_saturation_fraction")}}


# --search optuna: the sampler draws the four ratios q / r (scaling Q and R together leaves
# the gain unchanged) and minimizes settling time (a run that never settles scores twice the
# duration) and effort (a failed run scores FAILED_EFFORT) under the choice rule's constraint:
# ok, and no more effort than the defaults.  The gp sampler cycles over effort levels, fractions
# of the defaults' effort, from the choice rule's end (1) down to where a hypercube's bests lie.
SEARCHES = ("lhs", "optuna")  # crossdyn tune balance --search
SAMPLERS = searches.SAMPLERS
EFFORT_LEVELS = (1.0, 0.8, 0.6)
TRIALS_MAX = SAMPLES_MAX  # the same cap as a sweep's samples
FAILED_EFFORT = 1e3  # (N m)^2 s: above any balancing run's effort (the defaults use ~0.2)


def search(out: Path, *, trials: int, seed: int = 0, ranges: dict[str, tuple[float, float]] | None = None,
           duration: float = 4.0, initial_tilt_deg: float = 10.0, push_check: float = 0.0, workers: int = 1,
           scheduler: str | None = None, progress: bool = False, plots_: bool = True, mjcf: str = "",
           sampler: str = "gp", timeout: float | None = None) -> SweepResult:
    """Search the balance LQR weights with Optuna into ``out`` (the same files as :func:`sweep`).

    Trial 0 is the defaults; the weights stay within :data:`RANGES` (or ``ranges``).  Trials
    run a batch of ``workers`` at a time and a rerun resumes.  Other arguments are :func:`sweep`'s.

    Args:
      trials: trials after the defaults (``trials + 1`` runs in all), at most :data:`TRIALS_MAX`.
      seed: the sampler's seed.
      sampler: ``"gp"``, Gaussian-process epsilon-constraint steps over :data:`EFFORT_LEVELS`
        (:class:`~crossdyn.experiments.core.epsilon_sampler.EpsilonConstraintSampler`), or
        ``"tpe"``, Optuna's multi-objective TPE with the constraint.

    Raises:
      ParameterError: a bad count or value; ``out/samples.csv`` made with other arguments.
      CrossdynError: Optuna is not installed; the Dask scheduler cannot be reached.
    """
    if not 1 <= trials <= TRIALS_MAX:
        raise ParameterError(f"--trials must be from 1 to {TRIALS_MAX:,}, got {trials:,}")
    if sampler not in SAMPLERS:
        raise ParameterError(f"--sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
    # The same checks as a sweep's plan (duration, tilt), without planning its samples.
    plan_sweep(1, None, seed, ranges, duration, initial_tilt_deg, push_check, mjcf)
    how = searches.sampler(sampler, seed, fractions=EFFORT_LEVELS, reference=0,
                           failed=(2.0 * duration, FAILED_EFFORT)) if sampler == "gp" else \
        searches.sampler(sampler, seed)
    bounds = {w: {**RANGES, **(ranges or {})}[w] for w in WEIGHTS}
    perturbation = {**NOMINAL, "initial_tilt_deg": float(initial_tilt_deg)}

    def job(index: int, trial) -> Sample:
        weights = searches.suggest_ratios(trial, bounds)  # trial 0 draws them too: the sampler learns them
        return Sample(index, "default" if index == 0 else "optuna", DEFAULT_WEIGHTS if index == 0 else weights,
                      perturbation, float(duration), float(push_check), mjcf=mjcf)

    def score(row: dict, done: dict) -> tuple[tuple[float, float], dict[str, float]]:
        return _objectives(row, duration), {"effort_over_defaults": _excess(row, done[0])}

    def trials_on(open_engine, csv_path: Path, progress: bool) -> tuple[list[dict], int]:
        found = searches.read_trials(csv_path, COLUMNS, exact=True)
        study = searches.study(2, how, first={"ratio_" + w: DEFAULT_WEIGHTS[w] / DEFAULT_WEIGHTS["r"]
                                              for w in WEIGHTS if w != "r"})
        return searches.run_trials(study, job, score, csv_path, COLUMNS, trials, open_engine, progress,
                                   found=found, exact=True, failed=_failed)

    return _tune(BALANCE, out, trials_on, workers=workers, scheduler=scheduler, progress=progress, timeout=timeout,
                 options={"plots_": plots_})


def _objectives(row: dict, duration: float) -> tuple[float, float]:
    """(settling time, effort) of a trial, failures scored as the comment on :data:`SEARCHES` says."""
    settle, effort = _number(row, "settling_time_s"), _number(row, "effort_N2m2s")
    if row["outcome"] not in ("ok", "saturated", "push-failed") or not math.isfinite(settle):
        settle = 2.0 * duration
    if not math.isfinite(effort):
        effort = FAILED_EFFORT
    return settle, min(effort, FAILED_EFFORT)


def _excess(row: dict, default: dict) -> float:
    """The search's constraint (<= 0: ok and no more effort than the defaults)."""
    effort, limit = _number(row, "effort_N2m2s"), _number(default, "effort_N2m2s")
    if row["outcome"] == "ok" and math.isfinite(effort):
        return effort - limit if math.isfinite(limit) and default["outcome"] == "ok" else 0.0
    return FAILED_EFFORT


def robustness(out: Path, *, weights: dict[str, float] | None = None, axes: dict[str, list[float]] | None = None,
               duration: float = 6.0, workers: int = 1, scheduler: str | None = None,
               progress: bool = False, seed: int = 0, mjcf: str = "", timeout: float | None = None,
               batch: bool = True) -> SweepResult:
    """Success map over two perturbation axes for fixed LQR weights, into ``out``: experiment
    ``biped-robustness-map``.

    Success (the controller *holds*): up and no longer rolling at the end, settled or not.
    Writes ``out/robustness.csv``, ``out/timings.csv``, ``out/robustness.json`` (with the
    holding region) and ``out/robustness.png``.  Default axes: :data:`DEFAULT_AXES`; the
    default 6 s leaves a pushed robot time to roll back and stop.  ``seed`` seeds the
    imperfections' noise; ``mjcf`` is the robot; ``batch``: as :func:`sweep`'s.
    """
    axes = axes or DEFAULT_AXES
    plan = plan_robustness(weights or {}, axes, duration, seed, mjcf)
    return _tune(ROBUSTNESS, out, plan, workers=workers, scheduler=scheduler, progress=progress, timeout=timeout,
                 batch=batch, options={"axes": axes, "weights": plan[0].weights, "seed": seed, "mjcf": mjcf})


def _map(out: Path, result: SweepResult, *, axes: dict[str, list[float]], weights: dict, seed: int,
         mjcf: str) -> None:
    """A robustness map's summary: ``robustness.png`` with the holding region outlined, and ``robustness.json``."""
    (_, va), (_, vb) = axes.items()
    held = np.zeros((len(va), len(vb)))
    text = [["" for _ in vb] for _ in va]
    for row, (i, j) in zip(result.rows, itertools.product(range(len(va)), range(len(vb))), strict=False):
        held[i, j] = row["held"] == "true"
        settle = _number(row, "settling_time_s")
        text[i][j] = (f"{settle:.1f}s" if np.isfinite(settle) else "held") if held[i, j] else row["outcome"]
    region = held_map(out / "robustness.png", axes, held, text, f"green: holds ({int(held.sum())}/"
                      f"{held.size}); text: settling time, 'held' (steady, not settled) or outcome")
    result.summary = {"weights": weights, "axes": axes, "seed": seed, "mjcf": mjcf,
                      "held_fraction": float(held.mean()), "holding_region": region, "outcomes": result.counts()}
    write_json(out / "robustness.json", result.summary)


def weights_from(path: str) -> dict[str, float]:
    """LQR weights from a sweep's ``best.json`` (its chosen sample) or a folder holding one."""
    file = Path(path)
    if file.is_dir():
        file = file / "best.json"
    try:
        chosen = json.loads(file.read_text())["chosen"]
        if chosen is None:
            raise ParameterError(f"{file}: that sweep chose no weights (no sample balanced without saturating); "
                                 "pass --weight NAME=VALUE or another sweep")
        return {w: float(chosen["weights"][w]) for w in WEIGHTS}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ParameterError(f"cannot read chosen weights from {file}: {exc}") from None


# The two tunings, registered experiments that ``crossdyn tune balance`` / ``robustness`` run.

BALANCE, ROBUSTNESS = "biped-balance-tune", "biped-robustness-map"
_ONE_PARAMS = {**{w: COMMON[w] for w in WEIGHTS}, **PERTURBATIONS,
               "duration_s": Param(4.0, "simulated time, s", PUSH_START + PUSH_LENGTH, 600.0),
               "push_check_Ns": Param(0.0, "also require recovery from this push, N s (0: no push run)", 0.0, 200.0),
               "mjcf": COMMON["mjcf"]}


def _one(ctx) -> dict:
    """One sample of the tunings alone, scored as a sweep scores it (passes when ``ok``)."""
    p = ctx.params
    row = evaluate(Sample(0, "default", {w: p[w] for w in WEIGHTS}, {k: p[k] for k in PERTURBATIONS},
                          float(p["duration_s"]), float(p["push_check_Ns"]), seed=ctx.seed, mjcf=str(p["mjcf"])))
    text = ("outcome", "detail", "held", "push_recovered")
    metrics: dict[str, Any] = {k: _number(row, k) for k in (*GAINS, *METRICS) if k not in text and row[k] != ""}
    measured = (f"{row['outcome']}, settling time {_number(row, 'settling_time_s'):.2f} s, effort "
                f"{_number(row, 'effort_N2m2s'):.3f} (N m)^2 s" + (f": {row['detail']}" if row["detail"] else ""))
    return {"passed": row["outcome"] == "ok", "measured": measured, "outcome": row["outcome"],
            "held": row["held"] == "true", **metrics}


def _register() -> None:
    from crossdyn.experiments.biped import cli
    from crossdyn.experiments.core.registry import experiment
    from crossdyn.experiments.core.sweep.tuning import Tuning

    common: dict[str, Any] = dict(columns=COLUMNS, evaluate=evaluate, failed=_failed, warm=_warm, preload=_PRELOAD)
    experiment(BALANCE, summary=(cli.configure_balance.__doc__ or "").strip(), expected="an ok run",
               params=_ONE_PARAMS, tuning=Tuning("balance", cli.configure_balance, "samples.csv", summary=finish,
                                                 **common))(_one)
    experiment(ROBUSTNESS, summary=(cli.configure_robustness.__doc__ or "").strip(), expected="an ok run",
               params=_ONE_PARAMS, tuning=Tuning("robustness", cli.configure_robustness, "robustness.csv",
                                                 summary=_map, **common))(_one)


_register()
