"""Gain search with Optuna: a multi-objective search of the balance LQR's weights.

Where :func:`~crossdyn.experiments.biped.tune.sweep` samples blindly (grid or
Latin hypercube), :func:`search` lets an Optuna sampler choose each next set of
weights from the runs already made.  A trial is a sweep sample (one closed-loop
balance-recovery run, :func:`~crossdyn.experiments.biped.tune.evaluate`), scored on
two objectives, both minimized:

- settling time, s (a run that never settles, falls or diverges scores twice the
  run's duration);
- control effort ``integral (T_left + T_right)^2 dt``, (N m)^2 s (a failed run
  scores :data:`FAILED_EFFORT`).

with one constraint, the rule the sweep's choice uses: an ``ok`` outcome with no
more effort than the defaults.

Two samplers (:data:`SAMPLERS`):

- ``gp`` (the default), :class:`~crossdyn.experiments.core.epsilon_sampler.EpsilonConstraintSampler`:
  after 10 random trials, each trial minimizes settling time within a level of
  effort, 1, 0.8 or 0.6 of the defaults' in turn (epsilon-constraint steps),
  by constrained expected improvement on Gaussian processes of log settling
  time and log effort.  The levels trace the front from the choice rule's end
  down to where the hypercube's bests lie.
- ``tpe``: Optuna's multi-objective TPE with the constraint (MOTPE).

Measured at 64 runs against a Latin hypercube of the five weights, seeds 0-9
(``benchmarks/search_vs_lhs.py``): ``gp``'s best settles sooner than the
hypercube's in 10 of 10 seeds, and its front beats the hypercube's best at no
more effort in 10 of 10; ``tpe`` in 7 and 6 of 10.  On seeds 10-19 ``gp``
is sooner in 10 of 10 and its front wins 9 of 10 (seed 16: the hypercube's
best, 0.860 s at 0.209 (N m)^2 s, against the front's 0.863 s at that effort).
The fast designs within the defaults' effort fill about 1 % of the weight
space (a 1,024-point Sobol map: 8 of them settle within 1 s) and sit against
the effort limit; TPE models each weight apart and ranks an over-effort trial
below every feasible one, so it often never settles into that region.

What the samplers draw are the LQR's four weight ratios ``q / r``, not the five
weights: scaling Q and R together leaves the gain unchanged, so five weights
have one direction that changes nothing.  Each ratio is drawn log-uniformly
over what the ranges allow (``q_low / r_high`` to ``q_high / r_low``) and mapped
back into the ranges (:func:`_weights`).

Trial 0 is the hand-picked defaults (as a sweep's sample 0).  The weights stay
within :data:`~crossdyn.experiments.biped.tune.RANGES` (or ``ranges``).  Trials
run a batch at a time (as many as there are workers) on the local pool or a
Dask cluster, and are told to the sampler in trial order, so a search is
deterministic for a seed, a sampler and a batch size; a serial search (one
worker) for its seed and sampler alone.  Every trial is a row of
``samples.csv``, appended as it finishes; rerun with the same arguments, a
search replays the rows it finds (same seed, same suggestions) and runs only
the missing trials.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from crossdyn.experiments.biped import tune
from crossdyn.experiments.biped.tune import (
    DEFAULT_WEIGHTS,
    FAILED,
    NOMINAL,
    RANGES,
    SAMPLES_MAX,
    WEIGHTS,
    Sample,
    SweepResult,
)
from crossdyn.experiments.core.errors import CrossdynError, ParameterError
from crossdyn.experiments.core.sweep import table
from crossdyn.experiments.core.sweep.search import refuse_extra_trials

__all__ = ["search", "TRIALS_MAX", "FAILED_EFFORT", "SEARCHES", "SAMPLERS", "EFFORT_LEVELS"]

SEARCHES = ("lhs", "optuna")  # crossdyn tune balance --search
# crossdyn tune balance --search optuna --sampler: name -> what it is (the first is the default)
SAMPLERS = {"gp": "Gaussian-process", "tpe": "TPE"}
# The gp sampler's effort levels, fractions of the defaults' effort cycled over by
# trial: the front from the choice rule's end (1) down to where the hypercube's
# bests lie (0.16-0.22 against the defaults' 0.235 (N m)^2 s, seeds 0-9).
EFFORT_LEVELS = (1.0, 0.8, 0.6)
TRIALS_MAX = SAMPLES_MAX  # the same cap as a sweep's samples (tune.SAMPLES_MAX)
FAILED_EFFORT = 1e3  # (N m)^2 s: above any balancing run's effort (the defaults use ~0.2)


def search(out: Path, *, trials: int, seed: int = 0, ranges: dict[str, tuple[float, float]] | None = None,
           duration: float = 4.0, initial_tilt_deg: float = 10.0, push_check: float = 0.0, workers: int = 1,
           scheduler: str | None = None, progress: bool = False, plots_: bool = True, mjcf: str = "",
           sampler: str = "gp", timeout: float | None = None) -> SweepResult:
    """Search the balance LQR weights with Optuna into ``out`` (the same files as a sweep).

    Args:
      trials: trials after the defaults (``trials + 1`` runs in all), at most :data:`TRIALS_MAX`.
      seed: the sampler's seed.
      sampler: ``"gp"``, Gaussian-process epsilon-constraint steps
        (:class:`~crossdyn.experiments.core.epsilon_sampler.EpsilonConstraintSampler`), or
        ``"tpe"``, Optuna's multi-objective TPE with the constraint.
      ranges, duration, initial_tilt_deg, push_check, workers, scheduler, progress,
        plots_, mjcf: as :func:`~crossdyn.experiments.biped.tune.sweep`.

    Raises:
      ParameterError: a bad count or value; ``out/samples.csv`` made with other arguments.
      CrossdynError: Optuna is not installed; the Dask scheduler cannot be reached.
    """
    if not 1 <= trials <= TRIALS_MAX:
        raise ParameterError(f"--trials must be from 1 to {TRIALS_MAX:,}, got {trials:,}")
    if sampler not in SAMPLERS:
        raise ParameterError(f"--sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
    # The same checks as a sweep's plan (duration, tilt), without planning its samples.
    tune.plan_sweep(1, None, seed, ranges, duration, initial_tilt_deg, push_check, mjcf)
    try:
        import optuna
    except ImportError:
        raise CrossdynError("--search optuna needs Optuna: pip install optuna") from None
    optuna.logging.set_verbosity(optuna.logging.ERROR)

    with table.locked(Path(out)):  # a second search into this folder is refused, not mixed into its rows
        return _search(Path(out), trials, seed, ranges, duration, initial_tilt_deg, push_check, workers, scheduler,
                       progress, plots_, mjcf, sampler, timeout, optuna)


def _search(out: Path, trials: int, seed: int, ranges, duration: float, initial_tilt_deg: float, push_check: float,
            workers: int, scheduler: str | None, progress: bool, plots_: bool, mjcf: str, sampler: str,
            timeout: float | None, optuna) -> SweepResult:
    """:func:`search` once its arguments are checked and ``out`` is its own."""
    start = time.perf_counter()
    csv_path = out / "samples.csv"
    found = _read_rows(csv_path)
    bounds = {**RANGES, **(ranges or {})}
    perturbation = {**NOMINAL, "initial_tilt_deg": float(initial_tilt_deg)}
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=_sampler(sampler, seed, duration))
    study.enqueue_trial({_RATIO + w: DEFAULT_WEIGHTS[w] / DEFAULT_WEIGHTS["r"] for w in _Q})
    total = trials + 1
    done: dict[int, dict] = {}
    computed = 0
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, desc="search", unit="trial", dynamic_ncols=True)
    with tune.engine(workers, scheduler, timeout) as engine:
        batch = engine.size
        try:
            with tune.appending(csv_path, [found[i] for i in sorted(found)]) as record:
                for first in range(0, total, batch):
                    asked = [study.ask() for _ in range(min(batch, total - first))]
                    samples = [Sample(first + i, "default" if first + i == 0 else "optuna",
                                      {**_weights(t, bounds), **(DEFAULT_WEIGHTS if first + i == 0 else {})},
                                      perturbation, float(duration), float(push_check), mjcf=mjcf)
                               for i, t in enumerate(asked)]
                    for s in samples:
                        if s.index in found:
                            _check_same(csv_path, found[s.index], s)
                            done[s.index] = found[s.index]
                    todo = [s for s in samples if s.index not in done]
                    for row, seconds, where in engine.run(todo):
                        record(row, seconds, where)
                        done[int(row["sample"])] = row
                        computed += 1
                    # in trial order: the sampler's history is deterministic
                    for t, s in zip(asked, samples, strict=True):
                        _tell(study, t, done[s.index], done[0], duration)
                    if bar is not None:
                        bar.update(len(samples))
                        bar.set_postfix(failed=sum(done[s.index]["outcome"] in FAILED for s in samples))
        finally:
            if bar is not None:
                bar.close()
    refuse_extra_trials(csv_path, found, done, trials)
    rows = [done[i] for i in range(total)]
    tune._write_csv(csv_path, rows)
    result = SweepResult(rows, computed, total - computed, time.perf_counter() - start, csv_path)
    tune.finish(out, result, plots_)
    return result


def _sampler(name: str, seed: int, duration: float):
    """The Optuna sampler ``name`` (:data:`SAMPLERS`) for a search of ``duration``-second runs."""
    import optuna

    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    from crossdyn.experiments.core.epsilon_sampler import EpsilonConstraintSampler

    return EpsilonConstraintSampler(seed=seed, fractions=EFFORT_LEVELS, reference=0,
                                    failed=(2.0 * duration, FAILED_EFFORT))


def _read_rows(path: Path) -> dict[int, dict]:
    """Finished rows of an earlier run of this search, by trial (:func:`~crossdyn.experiments.biped.tune.read_table`).

    Raises:
      ParameterError: the file is not a sweep table of this version, or holds a bad trial number.
    """
    out: dict[int, dict] = {}
    for row in tune.read_table(path):
        try:
            index = int(row["sample"])
        except ValueError:
            raise ParameterError(f"{path} holds sample {row['sample']!r}: use another --out or delete it") from None
        if row["outcome"]:
            out.setdefault(index, row)
    return out


def _check_same(path: Path, row: dict, sample: Sample) -> None:
    """The CSV row of trial ``sample.index`` must be the trial this search suggests now."""
    for key, value in sample.key().items():
        if row[key] != value:
            raise ParameterError(f"{path} trial {sample.index} has {key}={row[key]} but this search has "
                                 f"{key}={value}: it was made with other arguments (seed, sampler, ranges, or "
                                 "worker count: trials are drawn a batch of workers at a time); use another --out or "
                                 "delete it")


def _objectives(row: dict, duration: float) -> tuple[float, float]:
    """(settling time, effort) of a trial, with the failure scores of the module docstring."""
    settle, effort = tune._value(row, "settling_time_s"), tune._value(row, "effort_N2m2s")
    if row["outcome"] not in ("ok", "saturated", "push-failed") or not math.isfinite(settle):
        settle = 2.0 * duration
    if not math.isfinite(effort):
        effort = FAILED_EFFORT
    return settle, min(effort, FAILED_EFFORT)


def _tell(study, trial, row: dict, default: dict, duration: float) -> None:
    """Tell the sampler a finished trial, with its constraint (<= 0: ok and no more effort than the defaults)."""
    effort, limit = tune._value(row, "effort_N2m2s"), tune._value(default, "effort_N2m2s")
    if row["outcome"] == "ok" and math.isfinite(effort):
        excess = effort - limit if math.isfinite(limit) and default["outcome"] == "ok" else 0.0
    else:
        excess = FAILED_EFFORT
    trial.set_constraint("effort_over_defaults", excess)
    study.tell(trial, _objectives(row, duration))


_Q = tuple(w for w in WEIGHTS if w != "r")  # the state weights; r is the input weight
_RATIO = "ratio_"  # the sampler's parameter for q_x / r is "ratio_q_x"


def _weights(trial, bounds: dict[str, tuple[float, float]]) -> dict[str, float]:
    """The trial's weights: ratios ``q / r`` drawn by the sampler, mapped back into ``bounds``.

    Trial 0 (the defaults) draws its ratios too, so the sampler knows them;
    its weights are the defaults themselves.  ``r`` is the geometric middle of the
    interval where every ``q = ratio r`` lies in its range; if there is no such
    ``r``, the middle of the two ends is clipped into r's range and each ``q``
    into its own (the gains then follow the clipped weights, as recorded).
    """
    ratios = {w: trial.suggest_float(_RATIO + w, bounds[w][0] / bounds["r"][1], bounds[w][1] / bounds["r"][0],
                                     log=True) for w in _Q}
    low = max([bounds["r"][0]] + [bounds[w][0] / ratios[w] for w in _Q])
    high = min([bounds["r"][1]] + [bounds[w][1] / ratios[w] for w in _Q])
    r = min(max(math.sqrt(low * high), bounds["r"][0]), bounds["r"][1])
    weights = {w: min(max(ratios[w] * r, bounds[w][0]), bounds[w][1]) for w in _Q}
    return {w: (r if w == "r" else weights[w]) for w in WEIGHTS}
