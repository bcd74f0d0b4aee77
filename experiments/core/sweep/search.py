"""Optuna searches of an experiment's parameters: ``crossdyn tune EXPERIMENT --search optuna``.

Trials are asked a batch of workers at a time and told in trial order, so a search is
deterministic for a seed, a sampler and a worker count, and a rerun replays the rows it
finds.  A run that errors or never reaches a finite metric is told a value worse than any
seen (``max + |max| + 1``).  Parameters that matter only through their ratios to one of them (LQR
weights: scaling Q and R together leaves the gain unchanged) can be drawn as those ratios
(:func:`suggest_ratios`).  With a constraint bounded by the defaults' own value
(``--constraint METRIC<=defaults``) the search has two objectives, the minimized metric and
``METRIC``, and traces the front below the bound: the ``gp`` sampler minimizes the objective with
``METRIC`` within one of :data:`FRONT_LEVELS` of the defaults' in turn
(:class:`~crossdyn.experiments.core.epsilon_sampler.EpsilonConstraintSampler`), ``tpe`` is Optuna's
multi-objective TPE.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import CrossdynError, ParameterError
from . import table
from .run import Meter, Progress
from .space import Vary

__all__ = ["search", "sampler", "suggest_ratios", "SAMPLERS", "FRONT_LEVELS"]

SAMPLERS = {"gp": "Gaussian-process", "tpe": "TPE"}  # --sampler: name -> what it is (the first is the default)
# The levels of a front below the defaults' value, as fractions of it: from the choice rule's end (1)
# down to where thriftier designs lie, one level per trial in turn.
FRONT_LEVELS = (1.0, 0.8, 0.6)
UNMEASURED = 1e300  # a front metric a run did not reach: told as this, and left out of the sampler's model of it


def sampler(name: str, seed: int, **gp):
    """The Optuna sampler ``name`` (:data:`SAMPLERS`), ``gp`` with the options ``gp``.

    Raises:
      CrossdynError: Optuna is not installed.
    """
    try:
        import optuna  # optional and slow to import: only a search needs it
    except ImportError:
        raise CrossdynError("--search optuna needs Optuna: pip install optuna") from None
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    from ..epsilon_sampler import EpsilonConstraintSampler  # late: it imports Optuna

    return EpsilonConstraintSampler(seed=seed, **gp)


def search(make_job: Callable, space: list[Vary], csv_path: Path, columns: Sequence[str], minimize: str | None,
           limits: list, trials: int, seed: int, sampler_name: str, engine, progress: Progress,
           front: tuple[str, float] | None = None, ratios_to: str | None = None,
           log_objective: bool = False) -> tuple[list, int]:
    """``--search optuna`` on an open ``engine``: ``(rows in trial order, runs made now)``.

    Args:
      make_job: ``make_job(index, kind, values)``, the run of sample ``index``.
      space, csv_path, columns: what varies; the table and its key columns.
      minimize, limits: the metric minimized and the bounds ``(metric, op, value)`` each run must meet.
      trials, seed, sampler_name: trials after the defaults; the sampler's seed and name.
      front: ``(metric, the defaults' value)`` of a ``METRIC<=defaults`` bound: the search's second
        objective, the ``gp`` sampler's levels below it (:data:`FRONT_LEVELS`).
      ratios_to: a varied parameter the others are drawn as ratios to (:func:`suggest_ratios`), or None.
      log_objective: the ``gp`` sampler models the minimized metric's logarithm (a positive metric).

    Raises:
      ParameterError: no ``--minimize`` metric; a table made with other arguments.
      CrossdynError: Optuna is missing; the Dask scheduler cannot be reached.
    """
    if minimize is None:
        raise ParameterError("--search optuna needs --minimize METRIC")
    found = _read_trials(csv_path, columns)
    gp = dict(levels=tuple(f * front[1] for f in FRONT_LEVELS), failed=(math.inf, UNMEASURED)) if front \
        else dict(levels=(math.inf,))
    # With a front, two objectives: the minimized metric and the bounded one.
    the_study = _study(1 if front is None else 2, sampler(sampler_name, seed, log_objective=log_objective, **gp)
                       if sampler_name == "gp" else sampler(sampler_name, seed))
    defaults = dict(make_job(0, "default", {}).values)
    # The defaults are trial 0 when they lie in the ranges (the sampler learns from them); otherwise
    # sample 0 stays outside the study and trial n is sample n + 1.
    offset = 0 if all(v.low <= defaults[v.name] <= v.high for v in space) else 1
    bounds = {v.name: (v.low, v.high) for v in space}
    if offset == 0:
        the_study.enqueue_trial({f"ratio_{v.name}": defaults[v.name] / defaults[ratios_to] for v in space
                                 if v.name != ratios_to} if ratios_to else {v.name: defaults[v.name] for v in space})
    elif 0 not in found:
        raise ParameterError(f"{csv_path}: the defaults run is missing")  # tune() runs it first
    worst = [table.cell(found[0], minimize)] if 0 in found else []  # finite objectives told, for the penalty

    def score(row: dict) -> tuple[Any, dict[str, float]]:
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
        if front is None:
            return value, constraints
        bounded = table.cell(row, front[0])
        return (value, bounded if math.isfinite(bounded) else UNMEASURED), constraints

    def job(index: int, trial):
        if ratios_to is not None:  # trial 0 draws the defaults' ratios too (enqueued): the sampler learns them
            drawn = suggest_ratios(trial, bounds, ratios_to)
        else:
            drawn = {} if index == 0 else _suggest(trial, space)
        return make_job(index, "default" if index == 0 else "optuna", {} if index == 0 else drawn)

    return _run_trials(the_study, job, score, csv_path, columns, trials, engine, progress, found=found,
                       done={} if offset == 0 else {0: found[0]}, first=offset)


def _study(directions: int, how):
    """A study minimizing ``directions`` objectives with the sampler ``how`` (:func:`sampler`)."""
    import optuna  # see sampler()

    return optuna.create_study(directions=["minimize"] * directions, sampler=how)


def _read_trials(csv_path: Path, columns: Sequence[str]) -> dict[int, dict]:
    """Finished rows of an earlier run of this search, by trial.

    Raises:
      ParameterError: not a table of this version, a damaged row or a bad trial number.
    """
    out: dict[int, dict] = {}
    for row in table.read(csv_path, columns, texts=table.TEXTS):
        try:
            index = int(row["sample"])
        except ValueError:
            raise ParameterError(f"{csv_path} holds sample {row['sample']!r}: use another --out or delete it") from None
        if row.get("outcome"):
            out.setdefault(index, row)
    return out


def _run_trials(the_study, make_job: Callable, score: Callable, csv_path: Path, columns: Sequence[str], trials: int,
                engine, progress: Progress, *, found: dict[int, dict], done: dict[int, dict], first: int
                ) -> tuple[list, int]:
    """Run trials ``first..trials`` on an open ``engine``: ``(rows in trial order, runs made now)``.

    ``make_job(index, trial)`` is the run of trial ``index``, its values suggested on ``trial``;
    ``score(row) -> (objectives, {constraint: excess})`` scores a finished trial (excess ``<= 0`` is
    feasible); ``found`` are the table's rows, ``done`` those done before ``first``.

    Raises:
      ParameterError: a found row is not the trial this search suggests now (other arguments).
    """
    total, done, computed = trials + 1, dict(done), 0
    meter = Meter(progress, total, first, 0, "search", "trial")
    try:
        with table.appending(csv_path, [found[i] for i in sorted(found)], columns) as record:
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
                    objectives, constraints = score(done[j.index])
                    for name, excess in constraints.items():
                        t.set_constraint(name, excess)
                    the_study.tell(t, objectives)
                meter.update(len(jobs), sum(done[j.index]["outcome"] != "pass" for j in jobs))
    finally:
        meter.close()
    extra = sorted(set(found) - set(done))
    if extra:
        raise ParameterError(f"{csv_path} holds trial {extra[0]}, beyond this search's {trials} trials: it was made "
                             "with other arguments; use another --out or delete it")
    rows = [done[i] for i in range(total)]
    table.write(csv_path, rows, table.columns_of(rows, columns))
    return rows, computed


def _suggest(trial, space: list[Vary]) -> dict:
    out = {}
    for v in space:
        if v.integer:
            out[v.name] = trial.suggest_int(v.name, int(math.ceil(v.low)), int(math.floor(v.high)), log=v.log)
        else:
            out[v.name] = trial.suggest_float(v.name, v.low, v.high, log=v.log)
    return out


def suggest_ratios(trial, bounds: dict[str, tuple[float, float]], denominator: str) -> dict[str, float]:
    """Values (by name, in ``bounds``' order) from the ratios to ``denominator`` an Optuna ``trial`` draws.

    Each ratio is drawn log-uniformly over what ``bounds`` (every parameter's ``(low, high)``, > 0,
    the ``denominator``'s among them) allow, as the parameter ``ratio_NAME``; the ``denominator`` is the
    geometric middle of the interval where every ``NAME = ratio * denominator`` lies in its range (or,
    without one, each is clipped into its range).
    """
    low_d, high_d = bounds[denominator]
    others = [name for name in bounds if name != denominator]
    ratios = {name: trial.suggest_float(f"ratio_{name}", bounds[name][0] / high_d, bounds[name][1] / low_d, log=True)
              for name in others}
    low = max([low_d] + [bounds[name][0] / ratios[name] for name in others])
    high = min([high_d] + [bounds[name][1] / ratios[name] for name in others])
    d = min(max(math.sqrt(low * high), low_d), high_d)
    values = {name: min(max(ratios[name] * d, bounds[name][0]), bounds[name][1]) for name in others}
    return {name: (d if name == denominator else values[name]) for name in bounds}


def _check_same(path: Path, row: dict, job) -> None:
    """The table's row of trial ``job.index`` must be the trial this search suggests now."""
    for key, value in job.key().items():
        if row.get(key) != value:
            raise ParameterError(f"{path} trial {job.index} has {key}={row.get(key)} but this search has "
                                 f"{key}={value}: "
                                 "it was made with other arguments (seed, sampler, ranges, or worker count: trials are "
                                 "drawn a batch of workers at a time); use another --out or delete it")
