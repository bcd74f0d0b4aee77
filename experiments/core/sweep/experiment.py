"""``crossdyn tune EXPERIMENT``: any registered experiment swept, searched or mapped over its parameters.

A *run* is the experiment's own function with one set of parameter values (no plots),
one row of ``samples.csv``: parameters, verdict, ``outcome`` and every numeric metric.
Sample 0 is the defaults, run first and alone; then a Latin hypercube, a grid (with two
parameters, a map) or an Optuna search.  A rerun resumes from the table.
"""

from __future__ import annotations

import contextlib
import functools
import math
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from crossdyn.experiments.core.baseline import NOT_MEASURED, numeric_metrics
from crossdyn.experiments.core.errors import CrossdynError, ParameterError
from crossdyn.experiments.core.runner import Context, make_out_dir, write_json
from crossdyn.experiments.core.sweep import engine as engines
from crossdyn.experiments.core.sweep import run as sweep_run
from crossdyn.experiments.core.sweep import table
from crossdyn.experiments.core.sweep.search import SAMPLERS
from crossdyn.experiments.core.sweep.space import Vary, parse_constraint, parse_vary, plan
from crossdyn.experiments.core.sweep.table import cell
from crossdyn.experiments.core.validate import seed as validate_seed

__all__ = ["Job", "JobBatch", "evaluate", "evaluate_batch", "tune", "TuneResult", "best_row", "SAMPLERS"]

RESULT_COLUMNS = ("passed", "outcome", "measured", "detail")
# The table's columns of text and the values each takes (None: any); every other column holds numbers.
TEXTS: dict[str, tuple[str, ...] | None] = {
    "kind": ("default", "lhs", "grid", "optuna"), "short": ("true", "false"), "passed": ("true", "false"),
    "outcome": ("pass", "fail", "error", "crashed", "timed out"), "measured": None, "detail": None}


def _text(value: Any) -> str:
    """CSV text of a value: round-trip floats (repr), lower-case booleans."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(float(value)) if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Job:
    """One run of a tune: its sample ``index`` (0: the defaults) and ``kind``; the ``experiment`` and the
    ``sources`` that register it; the parameter ``values`` set (``--set`` and varied) and the ``varied``
    names; its ``seed`` and ``short``; with ``--vary-from``, the ``model``'s values drawn by column and the
    ``uncertain`` parameters they belong to."""

    index: int
    kind: str
    experiment: str
    sources: tuple[str, ...]
    values: tuple[tuple[str, Any], ...]
    varied: tuple[str, ...]
    seed: int = 0
    short: bool = False
    model: tuple[tuple[str, float], ...] = ()
    uncertain: tuple = ()

    def key(self) -> dict[str, str]:
        """The columns that identify the run (compared on resume)."""
        values = dict(self.values)
        return {"sample": str(self.index), "kind": self.kind, "seed": str(self.seed), "short": _text(self.short),
                **{name: _text(values[name]) for name in self.varied},
                **{name: _text(value) for name, value in self.model}}


@functools.lru_cache(maxsize=8)
def _experiment(name: str, sources: tuple[str, ...]):
    from crossdyn.experiments.core.registry import experiments

    return experiments(sources)[name]


@functools.lru_cache(maxsize=1)
def _scratch() -> Path:
    """A folder of this process for what runs write (plots are not drawn; videos, tables may be)."""
    import atexit

    folder = Path(tempfile.mkdtemp(prefix="crossdyn-tune-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def evaluate(job: Job) -> dict[str, str]:
    """Run one job (or a :class:`JobBatch`) and return its table row (text; a failing run is a row)."""
    if isinstance(job, JobBatch):
        return evaluate_batch(job)  # type: ignore[return-value]
    try:
        exp = _experiment(job.experiment, job.sources)
        metrics = exp.run(_context(exp, job))
    except Exception as exc:  # one bad run must not lose a sweep; the message says what happened
        return _row(job, exc)
    return _row(job, metrics)


JobBatch = sweep_run.Batch  # runs of a tune evaluated together, by the experiment's batched form


def evaluate_batch(batch: JobBatch) -> list[dict[str, str]]:
    """Rows of a batch of runs, each the row :func:`evaluate` gives that run alone (run alone if the batch fails)."""
    try:
        exp = _experiment(batch.jobs[0].experiment, batch.jobs[0].sources)
        results = exp.batch([_context(exp, job) for job in batch.jobs])
        if len(results) != len(batch.jobs):
            raise CrossdynError(f"the batched form of {exp.name!r} returned {len(results)} results for "
                                f"{len(batch.jobs)} runs")
    except Exception:
        return [evaluate(job) for job in batch.jobs]
    return [_row(job, result) for job, result in zip(batch.jobs, results, strict=True)]


def _context(exp, job: Job) -> Context:
    params = {key: p.default for key, p in exp.params.items()} | dict(job.values)
    if job.model:  # --vary-from: this run's own copy of the MJCF, with its drawn values
        from crossdyn.experiments.core.identify import vary

        params[vary.MJCF_PARAM] = str(vary.write_model(params[vary.MJCF_PARAM], dict(job.model),
                                                       list(job.uncertain), _scratch() / f"model-{job.index}"))
    return Context(exp.name, _scratch(), short=job.short, seed=job.seed, params=params, plots=False)


def _row(job: Job, result) -> dict[str, str]:
    """A run's row from what it returned (its metrics) or raised."""
    row = {**job.key(), **{k: "" for k in RESULT_COLUMNS}}
    if isinstance(result, BaseException):
        detail = " ".join(str(result).split())
        if not isinstance(result, CrossdynError):
            detail = f"{type(result).__name__}: {detail}"
        row.update(outcome="error", passed="false", detail=detail)
        return row
    if not isinstance(result, dict):
        row.update(outcome="error", passed="false",
                   detail=f"experiment {job.experiment!r} returned a {type(result).__name__}, not its metrics")
        return row
    verdict = result.get("passed")
    passed = isinstance(verdict, (bool, np.bool_)) and bool(verdict)  # "False", 1, NaN: not a pass
    row.update(passed=_text(passed), outcome="pass" if passed else "fail",
               measured=" ".join(str(result.get("measured", "")).split()))
    for name, value in numeric_metrics(result).items():
        row[name if name not in row else f"metrics.{name}"] = _text(value)
    return row


def _meets(row: dict, constraints: list[tuple[str, str, float]]) -> bool:
    for metric, op, limit in constraints:
        v = cell(row, metric)
        if not (v <= limit if op == "<=" else v >= limit):  # NaN meets nothing
            return False
    return True


def best_row(rows: list[dict], minimize: str, constraints: list[tuple[str, str, float]]) -> dict | None:
    """The passing row with the lowest finite ``minimize`` meeting every constraint (ties: lower sample)."""
    ok = [r for r in rows if r["outcome"] == "pass" and math.isfinite(cell(r, minimize)) and _meets(r, constraints)]
    return min(ok, key=lambda r: (cell(r, minimize), int(r["sample"]))) if ok else None


@dataclass
class TuneResult(sweep_run.SweepResult):
    """A :class:`~crossdyn.experiments.core.sweep.run.SweepResult` with what was tuned: the tune's arguments,
    the ``files`` written besides the table, the experiment's declared metric ``tolerances`` (what variation
    is round-off), and with ``--vary-from`` the ``model_columns`` and ``notes``."""

    experiment: str = ""
    minimize: str | None = None
    constraints: list = field(default_factory=list)
    space: list = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    model_columns: list[str] = field(default_factory=list)
    notes: tuple[str, ...] = ()
    tolerances: dict = field(default_factory=dict)


def tune(name: str, out: Path, *, vary: Sequence = (), minimize: str | None = None, constraints: Sequence[str] = (),
         search: str = "lhs", sampler: str = "gp", samples: int = 32, seed: int = 0, fixed: dict | None = None,
         short: bool = False, sources: tuple[str, ...] | list[str] = (), workers: int = 1,
         scheduler: str | None = None, progress: sweep_run.Progress = False, plots: bool = True,
         timeout: float | None = None, vary_from: str | Path | None = None, plan: list | Callable | None = None,
         options: dict | None = None, batch: bool = True) -> TuneResult:
    """Sweep, search or map experiment ``name`` into ``out``.

    An experiment that declares its own :class:`~crossdyn.experiments.core.sweep.tuning.Tuning`
    is given its ``plan`` and ``options`` instead, and takes no other tune argument besides
    ``sources`` and the engine's.

    Args:
      name: a registered experiment (crossdyn's, an installed package's, or one of ``sources``).
      out: the output folder (``samples.csv``, ``timings.csv``, ``best.json``, plots).
      vary: ``NAME=LO:HI[:log]`` per parameter (or ``(name, text)`` pairs).
      minimize, constraints: the metric to minimize (dotted for nested metrics), and
        ``METRIC<=VALUE`` or ``METRIC>=VALUE`` each.
      search, sampler: ``lhs``, ``grid`` or ``optuna``; its sampler ``gp`` or ``tpe``.
      samples: runs after the defaults (the grid's budget, the search's trials).
      seed: seed of the plan or the sampler, and the experiment's seed.
      fixed: other parameters as ``--set`` takes them (name -> text).
      short, plots: the experiments' reduced runs; draw the plots.
      sources, workers, scheduler: as ``crossdyn run``'s and the sweep engine's.
      progress: a progress bar (True), or a function given a line per finished batch of runs.
      timeout: each run's time limit, s: a run over it is recorded ``timed out``.
      vary_from: an ``identified.json``: every run's model gets the identified parameters drawn
        within their intervals; the experiment must take an ``mjcf`` parameter.
      plan, options: an experiment with a tuning of its own: its jobs or search, and its summary's options.
      batch: a tuning's plan goes to the workers a batch at a time (never with ``timeout``).

    Raises:
      ParameterError: an unknown experiment, parameter or metric, a bad range, constraint,
        count or seed, a table made with other arguments or damaged, ``out`` in use by
        another tune, a defaults run that fails on its input, or a bad ``vary_from``.
      CrossdynError: the Dask scheduler cannot be reached; Optuna is missing.
    """
    from crossdyn.experiments.core.registry import loadable, tunings, unloaded
    from crossdyn.experiments.core.runner import pool_with_sources_imported

    if plan is not None:
        from crossdyn.experiments.core.sweep import tuning

        own = tunings(sources)
        if name not in own:
            raise ParameterError(f"experiment {name!r} declares no tuning of its own, so it takes no plan; "
                                 f"those that do: {', '.join(own) or 'none'}")
        done = tuning.run_plan(own[name].tuning, out, plan, workers=workers, scheduler=scheduler, progress=progress,
                               timeout=timeout, batch=batch, desc=f"tune {own[name].tuning.command}", options=options,
                               sources=tuple(sources))
        return TuneResult(**vars(done), experiment=name)
    start = time.perf_counter()
    if fresh := unloaded(sources):  # a file that exits or hangs while imported ends a worker, not this process
        pool_with_sources_imported(fresh, timeout=timeout).terminate()
    plan_ = _prepare(name, list(vary), minimize, constraints, search, sampler, samples, seed, fixed or {}, short,
                     tuple(sources), vary_from)
    # Every run, the defaults' too, in worker processes where a crash, an exit or a hang is seen (a row);
    # an experiment defined in the running script cannot be loaded there, and runs as the script's own.
    isolation = engines.Isolation(failed_row, timeout, _load_experiments, (plan_.sources,)) \
        if loadable(plan_.experiment) else None
    if isolation is None and timeout is not None:
        raise ParameterError(f"experiment {name!r} is defined in the running script, so a worker process cannot "
                             "load it and a time limit cannot stop it; register it in a file given to --from")
    out = Path(out)
    with table.locked(out):  # a second tune into this folder is refused, not mixed into its rows
        return _tune(name, out, plan_, start, isolation, search=search, sampler=sampler, samples=samples,
                     seed=seed, minimize=minimize, workers=workers, scheduler=scheduler, progress=progress,
                     plots=plots, timeout=timeout)


def _tune(name: str, out: Path, plan_: _Plan, start: float, isolation, *, search: str, sampler: str, samples: int,
          seed: int, minimize: str | None, workers: int, scheduler: str | None, progress: sweep_run.Progress,
          plots: bool, timeout: float | None) -> TuneResult:
    """:func:`tune` once its arguments are checked and ``out`` is its own."""
    csv_path = out / "samples.csv"
    columns = table.columns_of([], ("sample", "kind", "seed", "short", *(v.name for v in plan_.space),
                                    *plan_.model_columns))
    opened = engines.engine(evaluate, workers, scheduler, isolation=isolation) if isolation or scheduler \
        else contextlib.nullcontext(engines.in_this_process(evaluate))  # the running script's experiment: here
    with opened as engine:
        first = plan_.job(0, "default", {})
        _, ran_defaults = _defaults_run(first, csv_path, columns,
                                        lambda row: _check_defaults(row, name, minimize, plan_.limits,
                                                                    [*(v.name for v in plan_.space),
                                                                     *plan_.model_columns]), engine)
        if search == "optuna":
            from crossdyn.experiments.core.sweep.search import search as optuna_search

            rows, computed = optuna_search(plan_.job, plan_.space, csv_path, columns, minimize, plan_.limits, samples,
                                           seed, sampler, engine, progress)
        else:
            jobs = [first] + [plan_.job(i + 1, kind, values) for i, (kind, values) in enumerate(plan_.blind)]
            # An experiment with a batched form runs its sweep a batch at a time (not with --timeout: a
            # limit is per run); the defaults ran alone above.
            batching = plan_.experiment.batch is not None and timeout is None
            done = sweep_run.run_samples(evaluate, jobs, {j.index: j.key() for j in jobs}, csv_path, columns,
                                         progress=progress, exact=False, desc=f"tune {name}",
                                         engine=sweep_run.in_batches(engine) if batching else engine,
                                         failed=lambda row: row["outcome"] != "pass", texts=TEXTS)
            rows, computed = done.rows, done.computed
    computed += ran_defaults  # the table already held the defaults' row when the plan ran
    result = TuneResult(rows, computed, len(rows) - computed, time.perf_counter() - start, csv_path,
                        experiment=name, minimize=minimize, constraints=plan_.limits, space=plan_.space,
                        model_columns=plan_.model_columns, notes=plan_.notes,
                        tolerances=dict(plan_.experiment.tolerances))
    result.best = best_row(rows, minimize, plan_.limits) if minimize else None
    _write_best(out, result, plan_.fixed, search, sampler, seed)
    if plots:
        from crossdyn.experiments.core.sweep import plots as sweep_plots

        result.files = sweep_plots.draw(out, result, search)
    return result


@dataclass(frozen=True)
class _Plan:
    """A tune's arguments, checked: the experiment, what varies and what is fixed, the bounds, the blind runs."""

    experiment: Any
    space: list[Vary]
    fixed: dict
    limits: list[tuple[str, str, float]]
    blind: list[tuple[str, dict]]
    sources: tuple[str, ...]
    seed: int
    short: bool
    uncertain: tuple = ()
    notes: tuple[str, ...] = ()

    @property
    def model_columns(self) -> list[str]:
        from crossdyn.experiments.core.identify.vary import columns

        return columns(list(self.uncertain)) if self.uncertain else []

    def job(self, index: int, kind: str, values: dict) -> Job:
        """Run ``index``: the defaults, then the fixed values, then ``values`` (the varied ones); with
        ``--vary-from``, the model's values drawn for this run."""
        defaults = {v.name: self.experiment.params[v.name].default for v in self.space}
        model: tuple[tuple[str, float], ...] = ()
        if self.uncertain:
            from crossdyn.experiments.core.identify.vary import draw

            model = tuple(draw(list(self.uncertain), self.seed, index).items())
        return Job(index, kind, self.experiment.name, self.sources,
                   tuple(sorted({**self.fixed, **defaults, **values}.items())), tuple(v.name for v in self.space),
                   self.seed, self.short, model, self.uncertain)


def _prepare(name: str, vary: list, minimize: str | None, constraints, search: str, sampler: str, samples: int,
             seed: int, fixed: dict, short: bool, sources: tuple[str, ...], vary_from=None) -> _Plan:
    """Check a tune's arguments before anything runs (see :func:`tune`'s Raises)."""
    from crossdyn.experiments.core.registry import experiments

    seed = validate_seed(seed)
    registry = experiments(sources)
    if name not in registry:
        from crossdyn.experiments.core.registry import tunings

        if name in (own := tunings(sources)):
            raise ParameterError(f"experiment {name!r} is tuned with options of its own: "
                                 f"'crossdyn tune {own[name].tuning.command} --help'")
        raise ParameterError(f"no experiment {name!r}; known: {', '.join(registry)}")
    exp = registry[name]
    space = parse_vary(vary, exp.params, name)
    both = sorted({v.name for v in space} & set(fixed))
    if both:
        raise ParameterError(f"{both[0]} is both --set and --vary; give it once")
    given = exp.resolve_params({k: str(v) for k, v in fixed.items()})
    limits = [parse_constraint(c) for c in constraints]
    uncertain, notes = _uncertain(vary_from, exp, {**{k: p.default for k, p in exp.params.items()}, **given})
    from crossdyn.experiments.core.identify.vary import columns

    drawn = set(columns(uncertain))
    for metric in [minimize, *(m for m, _, _ in limits)]:
        what = 'minimize' if metric == minimize else 'bound'
        if metric in drawn:
            raise ParameterError(f"{metric!r} is a model value --vary-from draws, not a metric it can {what}")
        if metric in {v.name for v in space}:  # its column holds the value tried, not a result
            raise ParameterError(f"{metric!r} is a parameter this tune varies, not a metric it can {what}")
        if metric in (*RESULT_COLUMNS, *NOT_MEASURED, "sample", "kind", "seed", "short"):
            raise ParameterError(f"{metric!r} describes a run (its verdict, text or key), not a numeric metric a "
                                 f"tune can {what}; name one of the experiment's measured metrics")
    if search not in ("lhs", "grid", "optuna"):
        raise ParameterError(f"unknown search {search!r}; choose from lhs, grid, optuna")
    if search == "optuna":
        if minimize is None:
            raise ParameterError("--search optuna needs --minimize METRIC")
        if sampler not in SAMPLERS:
            raise ParameterError(f"--sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
        if not 1 <= samples <= 100_000:
            raise ParameterError(f"--samples must be from 1 to 100,000, got {samples:,}")
    blind = [] if search == "optuna" else plan(space, search, samples, seed)
    return _Plan(exp, space, {k: given[k] for k in fixed}, limits, blind, sources, seed, short, tuple(uncertain),
                 tuple(notes))


def _uncertain(vary_from, exp, params: dict) -> tuple[list, list[str]]:
    """``--vary-from``'s identified parameters and the sentences of those skipped; nothing without ``vary_from``."""
    if vary_from is None:
        return [], []
    from crossdyn.experiments.core.identify import vary

    if vary.MJCF_PARAM not in exp.params or not isinstance(exp.params[vary.MJCF_PARAM].default, str):
        raise ParameterError(f"--vary-from: experiment {exp.name!r} takes no '{vary.MJCF_PARAM}' parameter, so "
                             "it cannot be given another model; vary-from needs an experiment that loads its "
                             "MJCF from that parameter")
    uncertain, notes = vary.read_identified(vary_from)
    vary.check_elements(uncertain, str(params[vary.MJCF_PARAM]))
    return uncertain, notes


def _defaults_run(job: Job, csv_path: Path, columns: list[str], check, engine) -> tuple[dict, bool]:
    """Sample 0's row and whether it ran now: read back from the table, or run on ``engine``, ``check``-ed,
    then appended (a defaults run that ``check`` refuses writes nothing)."""
    rows = table.read(csv_path, columns, exact=False, texts=TEXTS)
    for row in rows:
        if row["sample"] == "0" and row.get("outcome"):
            table.read_done(csv_path, {0: job.key()}, columns, exact=False, only=True, texts=TEXTS)
            check(row)
            return row, False
    [(row, seconds, where)] = list(engine.run([job]))
    check(row)
    with table.appending(csv_path, rows, columns, grow=True) as record:
        record(row, seconds, where)
    return row, True


def _load_experiments(sources: tuple[str, ...]) -> None:
    """An isolated worker's start: the registry with the users' files (one that ends the process here is a
    start failure, one line)."""
    from crossdyn.experiments.core.registry import experiments

    experiments(sources)


def failed_row(job: Job, done) -> dict[str, str]:
    """The row of a run that ended without one: crashed (its process ended), timed out, or raised out of
    the evaluation (``SystemExit``, a ``KeyboardInterrupt`` of its own)."""
    if isinstance(job, JobBatch):  # every run of a batch that ended without its rows
        return [failed_row(one, done) for one in job.jobs]  # type: ignore[return-value]
    outcome, detail = sweep_run.ended(done)
    return {**job.key(), **{k: "" for k in RESULT_COLUMNS}, "passed": "false", "outcome": outcome, "detail": detail}


def _check_defaults(row: dict, name: str, minimize: str | None, limits: list, varied: list[str]) -> None:
    """The defaults run must run, and carry the metrics the tune names (else a ParameterError)."""
    if row["outcome"] in ("error", "crashed", "timed out"):
        raise ParameterError(f"the defaults run of {name!r} failed: {row['detail']}")
    metrics = _metric_names(row, varied)
    for metric in [minimize, *(m for m, _, _ in limits)]:
        if metric is not None and metric not in row:
            listed = ", ".join(metrics[:20]) + (", ..." if len(metrics) > 20 else "")
            raise ParameterError(f"experiment {name!r} has no numeric metric {metric!r} (its metrics: {listed})")


def _metric_names(row: dict, varied: list[str]) -> list[str]:
    """The metric columns of a table row: neither the run's key (sample, kind, seed, short, the varied
    parameters) nor its verdict."""
    return [k for k in row if k not in RESULT_COLUMNS and k not in ("sample", "kind", "seed", "short", *varied)]


def _summary(row: dict | None, space: list[Vary], minimize: str | None, limits: list,
             model_columns: Sequence[str] = ()) -> dict | None:
    """A run in ``best.json``: its parameters, verdict, the metrics the tune names and every metric it returned."""
    if row is None:
        return None
    named = [minimize, *(m for m, _, _ in limits)]
    varied = [v.name for v in space]
    model = {"model": {c: cell(row, c) for c in model_columns}} if model_columns else {}
    return {"sample": int(row["sample"]), "params": {name: cell(row, name) for name in varied}, **model,
            "passed": row["passed"] == "true", "outcome": row["outcome"], "measured": row["measured"],
            **{m: cell(row, m) for m in named if m is not None},
            "metrics": {m: cell(row, m) for m in _metric_names(row, [*varied, *model_columns])
                        if row.get(m, "") != ""}}


def _write_best(out: Path, result: TuneResult, fixed: dict, search: str, sampler: str, seed: int) -> None:
    limits = result.constraints
    rule = ("the passing run with the lowest " + result.minimize +
            "".join(f", {m} {op} {v:g}" for m, op, v in limits)) if result.minimize else "none (no --minimize)"
    make_out_dir(out)
    write_json(out / "best.json", {
        "experiment": result.experiment, "search": search, "sampler": sampler if search == "optuna" else None,
        "seed": seed, "fixed": fixed, "minimize": result.minimize,
        "constraints": [f"{m}{op}{v:g}" for m, op, v in limits], "rule": rule,
        "defaults": _summary(result.rows[0], result.space, result.minimize, limits, result.model_columns),
        "best": _summary(result.best, result.space, result.minimize, limits, result.model_columns),
        "outcomes": result.counts(),
    })
