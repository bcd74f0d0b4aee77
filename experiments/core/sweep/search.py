"""Optuna searches of an experiment's parameters: one loop for one metric or a front of two.

Trials are asked a batch of workers at a time and told in trial order, so a search is
deterministic for a seed, a sampler and a worker count, and a rerun replays the rows it
finds.  A run that errors or never reaches a finite metric is told a value worse than any
seen (``max + |max| + 1``).  LQR weights can be drawn as ratios (:func:`suggest_ratios`):
scaling Q and R together leaves the gain unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from crossdyn.experiments.core.errors import CrossdynError, ParameterError
from crossdyn.experiments.core.sweep import table
from crossdyn.experiments.core.sweep.run import Meter, Progress

__all__ = ["search", "run_trials", "study", "sampler", "suggest_ratios", "read_trials", "refuse_extra_trials",
           "SAMPLERS"]

SAMPLERS = {"gp": "Gaussian-process", "tpe": "TPE"}  # --sampler: name -> what it is (the first is the default)


def sampler(name: str, seed: int, **gp):
    """The Optuna sampler ``name`` (:data:`SAMPLERS`), ``gp`` with the options ``gp``.

    Raises:
      CrossdynError: Optuna is not installed.
    """
    try:
        import optuna
    except ImportError:
        raise CrossdynError("--search optuna needs Optuna: pip install optuna") from None
    optuna.logging.set_verbosity(optuna.logging.ERROR)

    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    from crossdyn.experiments.core.epsilon_sampler import EpsilonConstraintSampler

    return EpsilonConstraintSampler(seed=seed, **gp)


def study(directions: int, how, first: dict | None = None):
    """A study minimizing ``directions`` objectives with the sampler ``how`` (:func:`sampler`); ``first``, if
    given, is trial 0's parameters."""
    import optuna

    out = optuna.create_study(directions=["minimize"] * directions, sampler=how)
    if first is not None:
        out.enqueue_trial(first)
    return out


def suggest_ratios(trial, bounds: dict[str, tuple[float, float]], denominator: str = "r",
                   prefix: str = "ratio_") -> dict[str, float]:
    """LQR weights (by name, in ``bounds``' order) from the ratios ``q / r`` an Optuna ``trial`` draws.

    Each ratio is drawn log-uniformly over what ``bounds`` (every weight's ``(low, high)``, the
    ``denominator`` among them) allow, as the parameter ``prefix + q``; ``r`` is the geometric
    middle of the interval where every ``q = ratio r`` lies in its range (or, without one, clipped).
    """
    r_low, r_high = bounds[denominator]
    qs = [w for w in bounds if w != denominator]
    ratios = {w: trial.suggest_float(prefix + w, bounds[w][0] / r_high, bounds[w][1] / r_low, log=True) for w in qs}
    low = max([r_low] + [bounds[w][0] / ratios[w] for w in qs])
    high = min([r_high] + [bounds[w][1] / ratios[w] for w in qs])
    r = min(max(math.sqrt(low * high), r_low), r_high)
    weights = {w: min(max(ratios[w] * r, bounds[w][0]), bounds[w][1]) for w in qs}
    return {w: (r if w == denominator else weights[w]) for w in bounds}


def read_trials(csv_path: Path, columns: Sequence[str], *, exact: bool = False,
                texts: Mapping[str, Collection[str] | None] | None = None) -> dict[int, dict]:
    """Finished rows of an earlier run of this search, by trial.

    Raises:
      ParameterError: not a table of this version, a damaged row or a bad trial number.
    """
    out: dict[int, dict] = {}
    for row in table.read(csv_path, columns, exact=exact, texts=texts):
        try:
            index = int(row["sample"])
        except ValueError:
            raise ParameterError(f"{csv_path} holds sample {row['sample']!r}: use another --out or delete it") from None
        if row.get("outcome"):
            out.setdefault(index, row)
    return out


Score = Callable[[dict, dict], tuple[Any, dict[str, float]]]


def run_trials(the_study, make_job: Callable, score: Score, csv_path: Path, columns: Sequence[str], trials: int,
               engine, progress: Progress, *, found: dict[int, dict], done: dict[int, dict] | None = None,
               first: int = 0, exact: bool = False, failed: Callable[[dict], bool] | None = None) -> tuple[list, int]:
    """Run a search's trials ``first..trials`` on an open ``engine``: ``(rows in trial order, runs made now)``.

    ``make_job(index, trial)`` is the run of trial ``index``, its values suggested on ``trial``;
    ``score(row, done) -> (objectives, {constraint: excess})`` scores a finished trial (excess
    ``<= 0`` is feasible); ``found`` are the table's rows (:func:`read_trials`), ``done`` those
    done before ``first``; ``failed`` counts a row as failed in the progress shown (:class:`~.run.Meter`).

    Raises:
      ParameterError: a found row is not the trial this search suggests now (other arguments).
      CrossdynError: the Dask scheduler cannot be reached.
    """
    total, done, computed = trials + 1, dict(done or {}), 0
    meter = Meter(progress, total, first, 0, "search", "trial")
    try:
        with table.appending(csv_path, [found[i] for i in sorted(found)], columns, grow=not exact) as record:
            for start in range(first, total, engine.size):
                asked = [the_study.ask() for _ in range(min(engine.size, total - start))]
                jobs = [make_job(start + i, t) for i, t in enumerate(asked)]
                for j in jobs:
                    if j.index in found:
                        _check_same(csv_path, found[j.index], j)
                        done[j.index] = found[j.index]
                for row, seconds, where in engine.run([j for j in jobs if j.index not in done]):
                    record(row, seconds, where)
                    done[int(row["sample"])] = row
                    computed += 1
                for t, j in zip(asked, jobs, strict=True):  # in trial order: the sampler's history is deterministic
                    objectives, constraints = score(done[j.index], done)
                    for name, excess in constraints.items():
                        t.set_constraint(name, excess)
                    the_study.tell(t, objectives)
                meter.update(len(jobs), sum(failed(done[j.index]) for j in jobs) if failed is not None else 0)
    finally:
        meter.close()
    refuse_extra_trials(csv_path, found, done, trials)
    rows = [done[i] for i in range(total)]
    table.write(csv_path, rows, list(columns) if exact else table.columns_of(rows, columns))
    return rows, computed


def _suggest(trial, space) -> dict:
    out = {}
    for v in space:
        if v.integer:
            out[v.name] = trial.suggest_int(v.name, int(math.ceil(v.low)), int(math.floor(v.high)), log=v.log)
        else:
            out[v.name] = trial.suggest_float(v.name, v.low, v.high, log=v.log)
    return out


def search(make_job: Callable, space, csv_path: Path, columns, minimize: str | None, limits: list, trials: int,
           seed: int, sampler_name: str, engine, progress: Progress) -> tuple[list, int]:
    """``crossdyn tune EXPERIMENT --search optuna`` on an open ``engine``: ``(rows in trial order, runs made now)``.

    Raises:
      ParameterError: no ``--minimize`` metric; a table made with other arguments.
      CrossdynError: Optuna is missing; the Dask scheduler cannot be reached.
    """
    if minimize is None:
        raise ParameterError("--search optuna needs --minimize METRIC")
    from crossdyn.experiments.core.sweep.experiment import TEXTS

    found = read_trials(csv_path, columns, texts=TEXTS)
    the_study = study(1, sampler(sampler_name, seed, levels=(math.inf,), log_objective=False))
    defaults = dict(make_job(0, "default", {}).values)
    # The defaults are trial 0 when they lie in the ranges (the sampler learns from them); otherwise
    # sample 0 stays outside the study and trial n is sample n + 1.
    offset = 0 if all(v.low <= defaults[v.name] <= v.high for v in space) else 1
    if offset == 0:
        the_study.enqueue_trial({v.name: defaults[v.name] for v in space})
    elif 0 not in found:
        raise ParameterError(f"{csv_path}: the defaults run is missing")  # tune() runs it first
    worst = [table.cell(found[0], minimize)] if 0 in found else []  # finite objectives told, for the penalty

    def score(row: dict, done: dict) -> tuple[float, dict[str, float]]:
        value = table.cell(row, minimize)
        if math.isfinite(value):
            worst.append(value)
        else:  # an error or a run that never got there: worse than any seen, so the model learns it
            known = [v for v in worst if math.isfinite(v)]
            value = max(known) + abs(max(known)) + 1.0 if known else 1.0
        constraints = {"verdict": 0.0 if row["outcome"] == "pass" else 1.0}
        for metric, op, limit in limits:
            v = table.cell(row, metric)
            constraints[metric] = (v - limit if op == "<=" else limit - v) if math.isfinite(v) else 1e300
        return value, constraints

    def job(index: int, trial):
        return make_job(index, "default" if index == 0 else "optuna", {} if index == 0 else _suggest(trial, space))

    return run_trials(the_study, job, score, csv_path, columns, trials, engine, progress, found=found,
               done={} if offset == 0 else {0: found[0]}, first=offset)


def refuse_extra_trials(csv_path: Path, found, done, trials: int) -> None:
    """A resumed table with a trial past this search's (``found`` rows that ``done`` has not) was made otherwise:
    a ParameterError naming the first such trial."""
    extra = sorted(set(found) - set(done))
    if extra:
        raise ParameterError(f"{csv_path} holds trial {extra[0]}, beyond this search's {trials} trials: it was made "
                             "with other arguments; use another --out or delete it")


def _check_same(path: Path, row: dict, job) -> None:
    """The table's row of trial ``job.index`` must be the trial this search suggests now."""
    for key, value in job.key().items():
        if row.get(key) != value:
            raise ParameterError(f"{path} trial {job.index} has {key}={row.get(key)} but this search has "
                                 f"{key}={value}: "
                                 "it was made with other arguments (seed, sampler, ranges, or worker count: trials are "
                                 "drawn a batch of workers at a time); use another --out or delete it")
