"""``crossdyn tune EXPERIMENT --search optuna``: an Optuna study of one metric, with constraints.

Each trial is a run (:func:`~crossdyn.experiments.core.sweep.experiment.evaluate`);
the study minimizes ``--minimize`` over the ``--vary`` ranges, and a trial is
feasible when it passes (the experiment's own verdict) and meets every
``--constraint``.  A run that errors or whose metric is not finite (never
settled, say) is told a value worse than any seen so far (``max + |max| + 1``),
so the sampler's model learns the region is bad.
Samplers:

- ``gp`` (default): :class:`~crossdyn.experiments.core.epsilon_sampler.EpsilonConstraintSampler`
  in its single-objective form: after 10 random trials, the next parameters
  maximize the expected improvement of a Gaussian process of the metric over the
  best feasible trial;
- ``tpe``: Optuna's TPE with the constraints.

Trial 0 is the experiment's defaults.  Trials are asked a batch of workers at a
time and told in trial order, so a search is deterministic for a seed, a sampler
and a worker count.  Every trial is a row of ``samples.csv``; rerun with the same
arguments, a search replays the rows it finds (same seed, same suggestions) and
runs only the missing trials.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from crossdyn.experiments.core.errors import CrossdynError, ParameterError
from crossdyn.experiments.core.sweep import table

__all__ = ["search", "refuse_extra_trials"]


def _sampler(name: str, seed: int):
    import optuna

    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    from crossdyn.experiments.core.epsilon_sampler import EpsilonConstraintSampler

    return EpsilonConstraintSampler(seed=seed, levels=(math.inf,), log_objective=False)


def _suggest(trial, space) -> dict:
    out = {}
    for v in space:
        if v.integer:
            out[v.name] = trial.suggest_int(v.name, int(math.ceil(v.low)), int(math.floor(v.high)), log=v.log)
        else:
            out[v.name] = trial.suggest_float(v.name, v.low, v.high, log=v.log)
    return out


def search(make_job: Callable, space, csv_path: Path, columns, minimize: str | None, limits: list, trials: int,
           seed: int, sampler: str, engine, progress: bool) -> tuple[list, int]:
    """Run the search on an open ``engine``; returns ``(rows in trial order, runs made now)``.

    Raises:
      ParameterError: no ``--minimize`` metric; a table made with other arguments.
      CrossdynError: Optuna is missing; the Dask scheduler cannot be reached.
    """
    if minimize is None:
        raise ParameterError("--search optuna needs --minimize METRIC")
    try:
        import optuna
    except ImportError:
        raise CrossdynError("--search optuna needs Optuna: pip install optuna") from None
    from crossdyn.experiments.core.sweep.experiment import TEXTS

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    found = {int(r["sample"]): r for r in table.read(csv_path, columns, exact=False, texts=TEXTS) if r.get("outcome")}
    study = optuna.create_study(direction="minimize", sampler=_sampler(sampler, seed))
    defaults = dict(make_job(0, "default", {}).values)
    # The defaults are trial 0 when they lie in the ranges (the sampler learns from them); otherwise
    # sample 0 stays outside the study and trial n is sample n + 1.
    offset = 0 if all(v.low <= defaults[v.name] <= v.high for v in space) else 1
    if offset == 0:
        study.enqueue_trial({v.name: defaults[v.name] for v in space})
    else:
        if 0 not in found:
            raise ParameterError(f"{csv_path}: the defaults run is missing")  # tune() runs it first
    total, done, computed = trials + 1, ({} if offset == 0 else {0: found[0]}), 0
    worst = [_number(found[0], minimize)] if 0 in found else []  # finite objectives told, for the penalty
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, initial=offset, desc="search", unit="trial", dynamic_ncols=True)
    try:
        with table.appending(csv_path, [found[i] for i in sorted(found)], columns, grow=True) as record:
            for first in range(offset, total, engine.size):
                asked = [study.ask() for _ in range(min(engine.size, total - first))]
                jobs = [make_job(first + i, "default" if first + i == 0 else "optuna",
                                 {} if first + i == 0 else _suggest(t, space)) for i, t in enumerate(asked)]
                for j in jobs:
                    if j.index in found:
                        _check_same(csv_path, found[j.index], j)
                        done[j.index] = found[j.index]
                for row, seconds, where in engine.run([j for j in jobs if j.index not in done]):
                    record(row, seconds, where)
                    done[int(row["sample"])] = row
                    computed += 1
                for t, j in zip(asked, jobs, strict=False):  # in trial order: the sampler's history is deterministic
                    row = done[j.index]
                    value = _number(row, minimize)
                    if math.isfinite(value):
                        worst.append(value)
                    else:  # an error or a run that never got there: worse than any seen, so the model learns it
                        known = [v for v in worst if math.isfinite(v)]
                        value = max(known) + abs(max(known)) + 1.0 if known else 1.0
                    t.set_constraint("verdict", 0.0 if row["outcome"] == "pass" else 1.0)
                    for metric, op, limit in limits:
                        v = _number(row, metric)
                        excess = (v - limit if op == "<=" else limit - v) if math.isfinite(v) else 1e300
                        t.set_constraint(metric, excess)
                    study.tell(t, value)
                if bar is not None:
                    bar.update(len(jobs))
    finally:
        if bar is not None:
            bar.close()
    refuse_extra_trials(csv_path, found, done, trials)
    rows = [done[i] for i in range(total)]
    table.write(csv_path, rows, table.columns_of(rows, columns))
    return rows, computed


def refuse_extra_trials(csv_path: Path, found, done, trials: int) -> None:
    """A resumed table with a trial past this search's (``found`` rows that ``done`` has not) was made otherwise.

    Raises:
      ParameterError: naming the first such trial.
    """
    extra = sorted(set(found) - set(done))
    if extra:
        raise ParameterError(f"{csv_path} holds trial {extra[0]}, beyond this search's {trials} trials: it was made "
                             "with other arguments; use another --out or delete it")


def _number(row: dict, key: str) -> float:
    try:
        return float(row.get(key, ""))
    except ValueError:
        return math.nan


def _check_same(path: Path, row: dict, job) -> None:
    """The table's row of trial ``job.index`` must be the trial this search suggests now."""
    for key, value in job.key().items():
        if row.get(key) != value:
            raise ParameterError(f"{path} trial {job.index} has {key}={row.get(key)} but this search has "
                                 f"{key}={value}: "
                                 "it was made with other arguments (seed, sampler, ranges, or worker count: trials are "
                                 "drawn a batch of workers at a time); use another --out or delete it")
