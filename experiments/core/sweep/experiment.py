"""``crossdyn tune EXPERIMENT``: any registered experiment swept, searched or mapped over its parameters.

A *run* is the experiment's own function with one set of parameter values (no plots),
one row of ``samples.csv``: parameters, verdict, ``outcome`` and every numeric metric.
Sample 0 is the defaults, run first and alone; then a Latin hypercube, a grid (with two
parameters, a map) or an Optuna search.  A rerun resumes from the table.  An experiment
may declare the tune it is usually run with (``@experiment(..., default_tune=...)``).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import math
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..baseline import NOT_MEASURED, numeric_metrics
from ..errors import CrossdynError, ParameterError
from ..files import make_out_dir, write_json
from ..identify import vary as varied_model
from ..registry import experiments, loadable, unloaded
from ..runner import Context, pool_with_sources_imported
from ..validate import seed as validate_seed
from . import engine as engines
from . import plots as sweep_plots
from . import run as sweep_run
from . import table
from .choice import best_row
from .engine import TuneEngine
from .search import SAMPLERS
from .search import search as optuna_search
from .space import DEFAULTS, Vary, parse_constraint, parse_vary, plan, refuse_lists
from .table import TEXTS, cell

__all__ = ["Job", "JobBatch", "evaluate", "evaluate_batch", "tune", "TuneResult", "best_params",
           ]

RESULT_COLUMNS = ("passed", "outcome", "measured", "detail")
LOG = ":log"  # --minimize METRIC:log: the search models the metric's logarithm (a positive one)


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
    return experiments(sources)[name]


@functools.lru_cache(maxsize=1)
def _scratch() -> Path:
    """A folder of this process for what runs write (plots are not drawn; videos, tables may be)."""
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
        mjcf = varied_model.MJCF_PARAM
        params[mjcf] = str(varied_model.write_model(params[mjcf], dict(job.model), list(job.uncertain),
                                                    _scratch() / f"model-{job.index}"))
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


@dataclass
class TuneResult(sweep_run.SweepResult):
    """A :class:`~crossdyn.experiments.core.sweep.run.SweepResult` with what was tuned: the tune's arguments
    (``constraints`` as bounds, a bound by the defaults' value resolved), the ``files`` written besides the
    table, the experiment's declared metric ``tolerances`` (what variation is round-off), and with
    ``--vary-from`` the ``model_columns`` and ``notes``."""

    experiment: str = ""
    search: str = "lhs"
    minimize: str | None = None
    constraints: list = field(default_factory=list)
    space: list = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    model_columns: list[str] = field(default_factory=list)
    notes: tuple[str, ...] = ()
    tolerances: dict = field(default_factory=dict)


def tune(name: str, out: Path, *, vary: Sequence = (), minimize: str | None = None, constraints: Sequence[str] = (),
         search: str | None = None, sampler: str = "gp", samples: int = 32, seed: int = 0, fixed: dict | None = None,
         short: bool = False, sources: tuple[str, ...] | list[str] = (), plots: bool = True,
         vary_from: str | Path | None = None, ratios_to: str | None = None,
         engine: TuneEngine | None = None) -> TuneResult:
    """Sweep, search or map experiment ``name`` into ``out``.

    Without ``vary``, the experiment's declared tune (``default_tune``) is run: its ``vary``, ``search``
    and ``fixed`` (``fixed`` here adds to its and fixes a parameter it varies); ``minimize`` and
    ``constraints`` default to its whatever is varied.

    Args:
      name: a registered experiment (crossdyn's, an installed package's, or one of ``sources``).
      out: the output folder (``samples.csv``, ``timings.csv``, ``best.json``, plots).
      vary: ``NAME=LO:HI[:log]`` (a range) or ``NAME=V1,V2,...`` (a grid's axis) per parameter (or
        ``(name, text)`` pairs).
      minimize, constraints: the metric to minimize (dotted for nested metrics; ``METRIC:log``: the
        search models its logarithm), and ``METRIC<=VALUE`` or ``METRIC>=VALUE`` each (``VALUE``
        ``defaults``: the defaults run's own).
      search, sampler: ``lhs`` (the default), ``grid`` or ``optuna``; its sampler ``gp`` or ``tpe``.
      samples: runs after the defaults (the grid's budget, the search's trials).
      seed: seed of the plan or the sampler, and the experiment's seed.
      fixed: other parameters as ``--set`` takes them (name -> text).
      short, plots: the experiments' reduced runs; draw the plots.
      sources: the users' files or modules to load experiments from, as ``crossdyn run --from``.
      vary_from: an ``identified.json``: every run's model gets the identified parameters drawn
        within their intervals; the experiment must take an ``mjcf`` parameter.
      ratios_to: a varied parameter the others matter only through their ratios to (an LQR's R: the
        gain is unchanged when Q and R scale together); an Optuna search draws those ratios. Every
        varied parameter must then be a ``:log`` range.
      engine: where and how the runs execute (:class:`TuneEngine`: workers, a Dask scheduler, each
        run's time limit, batches, progress); one local worker by default.

    Raises:
      ParameterError: an unknown experiment, parameter or metric, a bad range, constraint,
        count or seed, a table made with other arguments or damaged, ``out`` in use by
        another tune, a defaults run that fails on its input, or a bad ``vary_from``.
      CrossdynError: the Dask scheduler cannot be reached; Optuna is missing.
    """
    engine = engine or TuneEngine()
    start = time.perf_counter()
    if fresh := unloaded(sources):  # a file that exits or hangs while imported ends a worker, not this process
        pool_with_sources_imported(fresh, timeout=engine.timeout).terminate()
    plan_ = _prepare(name, list(vary), minimize, list(constraints), search, sampler, samples, seed, fixed or {},
                     short, tuple(sources), vary_from, ratios_to)
    # Every run, the defaults' too, in worker processes where a crash, an exit or a hang is seen (a row);
    # an experiment defined in the running script cannot be loaded there, and runs as the script's own.
    isolation = engines.Isolation(failed_row, engine.timeout, _load_experiments, (plan_.sources,)) \
        if loadable(plan_.experiment) else None
    if isolation is None and engine.timeout is not None:
        raise ParameterError(f"experiment {name!r} is defined in the running script, so a worker process cannot "
                             "load it and a time limit cannot stop it; register it in a file given to --from")
    out = Path(out)
    with table.locked(out):  # a second tune into this folder is refused, not mixed into its rows
        return _tune(out, plan_, start, isolation, engine, plots)


def _tune(out: Path, plan_: _Plan, start: float, isolation, engine: TuneEngine, plots: bool) -> TuneResult:
    """:func:`tune` once its arguments are checked and ``out`` is its own."""
    name, csv_path = plan_.experiment.name, out / "samples.csv"
    columns = table.columns_of([], ("sample", "kind", "seed", "short", *(v.name for v in plan_.space),
                                    *plan_.model_columns))
    opened = engines.engine(evaluate, engine.workers, engine.scheduler, isolation=isolation) \
        if isolation or engine.scheduler else contextlib.nullcontext(engines.in_this_process(evaluate))
    with opened as runs:  # the running script's experiment: here
        first = plan_.job(0, "default", {})
        defaults, ran_defaults = _defaults_run(first, csv_path, columns, lambda row: _check_defaults(row, plan_), runs)
        bounds = [(m, op, v if v is not None else _bound(defaults, m, op)) for m, op, v in plan_.limits]
        if plan_.search == "optuna":
            front = next(((m, v) for (m, op, rel), (_, _, v) in zip(plan_.limits, bounds, strict=True)
                          if rel is None and op == "<=" and 0 < v < math.inf), None)
            rows, computed = optuna_search(plan_.job, plan_.space, csv_path, columns, plan_.minimize, bounds,
                                           plan_.samples, plan_.seed, plan_.sampler, runs, engine.progress, front,
                                           plan_.ratios_to, plan_.log_objective)
        else:
            jobs = [first] + [plan_.job(i + 1, kind, values) for i, (kind, values) in enumerate(plan_.blind)]
            # An experiment with a batched form runs its sweep a batch at a time (not with --timeout: a
            # limit is per run); the defaults ran alone above.
            batched = sweep_run.in_batches(runs) if engine.batches(plan_.experiment.batch is not None) else runs
            done = sweep_run.run_samples(jobs, csv_path, columns, batched, progress=engine.progress,
                                         desc=f"tune {name}", failed=lambda row: row["outcome"] != "pass", texts=TEXTS)
            rows, computed = done.rows, done.computed
    computed += ran_defaults  # the table already held the defaults' row when the plan ran
    result = TuneResult(rows, computed, len(rows) - computed, time.perf_counter() - start, csv_path,
                        experiment=name, search=plan_.search, minimize=plan_.minimize, constraints=bounds,
                        space=plan_.space, model_columns=plan_.model_columns, notes=plan_.notes,
                        tolerances=dict(plan_.experiment.tolerances))
    result.best = best_row(rows, plan_.minimize, bounds) if plan_.minimize else None
    _write_best(out, result, plan_)
    if plots:
        result.files = sweep_plots.draw(out, result, plan_.search)
    return result


def _bound(defaults: dict, metric: str, op: str) -> float:
    """A ``METRIC<=defaults`` (or ``>=``) bound: the defaults run's value, or none (+-inf) when the defaults
    failed (no worse than a run that fails bounds nothing)."""
    if defaults["outcome"] != "pass":
        return math.inf if op == "<=" else -math.inf
    return cell(defaults, metric)


@dataclass(frozen=True)
class _Plan:
    """A tune's arguments, checked: the experiment, what varies and what is fixed, the search and its budget,
    the metric minimized and the bounds (``None``: the defaults run's value), the blind runs."""

    experiment: Any
    space: list[Vary]
    fixed: dict
    search: str
    sampler: str
    samples: int
    minimize: str | None
    limits: list[tuple[str, str, float | None]]
    blind: list[tuple[str, dict]]
    sources: tuple[str, ...]
    seed: int
    short: bool
    uncertain: tuple = ()
    notes: tuple[str, ...] = ()
    ratios_to: str | None = None
    log_objective: bool = False

    @property
    def model_columns(self) -> list[str]:
        return varied_model.columns(list(self.uncertain)) if self.uncertain else []

    def job(self, index: int, kind: str, values: dict) -> Job:
        """Run ``index``: the defaults, then the fixed values, then ``values`` (the varied ones); with
        ``--vary-from``, the model's values drawn for this run."""
        defaults = {v.name: self.experiment.params[v.name].default for v in self.space}
        model: tuple[tuple[str, float], ...] = ()
        if self.uncertain:
            model = tuple(varied_model.draw(list(self.uncertain), self.seed, index).items())
        return Job(index, kind, self.experiment.name, self.sources,
                   tuple(sorted({**self.fixed, **defaults, **values}.items())), tuple(v.name for v in self.space),
                   self.seed, self.short, model, self.uncertain)


def _prepare(name: str, vary: list, minimize: str | None, constraints: list, search: str | None, sampler: str,
             samples: int, seed: int, fixed: dict, short: bool, sources: tuple[str, ...], vary_from=None,
             ratios_to: str | None = None) -> _Plan:
    """Check a tune's arguments before anything runs (see :func:`tune`'s Raises)."""
    seed = validate_seed(seed)
    registry = experiments(sources)
    if name not in registry:
        raise ParameterError(f"no experiment {name!r}; known: {', '.join(registry)}")
    exp = registry[name]
    declared = exp.default_tune
    if not vary and declared.get("vary"):  # its declared tune, less what --set fixes
        vary = [item for item in declared["vary"] if item.partition("=")[0].strip() not in fixed]
        search = search or declared.get("search")
        fixed = {**declared.get("fixed", {}), **fixed}
        if declared.get("ratios_to") in {item.partition("=")[0].strip() for item in vary}:  # unless fixed
            ratios_to = ratios_to or declared["ratios_to"]
    search = search or "lhs"
    minimize = minimize if minimize is not None else declared.get("minimize")
    log_objective = minimize is not None and minimize.endswith(LOG)
    minimize = minimize.removesuffix(LOG) if minimize is not None else None
    constraints = constraints or list(declared.get("constraints", ()))
    space = parse_vary(vary, exp.params, name)
    both = sorted({v.name for v in space} & set(fixed))
    if both:
        raise ParameterError(f"{both[0]} is both --set and --vary; give it once")
    given = exp.resolve_params({k: str(v) for k, v in fixed.items()})
    limits = [parse_constraint(c) for c in constraints]
    uncertain, notes = _uncertain(vary_from, exp, {**{k: p.default for k, p in exp.params.items()}, **given})
    drawn = set(varied_model.columns(uncertain))
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
        refuse_lists(space, search)
    _check_ratios(ratios_to, space)
    blind = [] if search == "optuna" else plan(space, search, samples, seed)
    return _Plan(exp, space, {k: given[k] for k in fixed}, search, sampler, samples, minimize, limits, blind, sources,
                 seed, short, tuple(uncertain), tuple(notes), ratios_to, log_objective)


def _check_ratios(ratios_to: str | None, space: list[Vary]) -> None:
    """Ratios to a parameter the tune varies, every varied one a log range (a ParameterError otherwise)."""
    if ratios_to is None:
        return
    if ratios_to not in {v.name for v in space}:
        raise ParameterError(f"--ratios-to {ratios_to}: not a parameter this tune varies "
                             f"({', '.join(v.name for v in space) or 'none'})")
    linear = [v.name for v in space if not v.log]
    if linear:
        raise ParameterError(f"--ratios-to {ratios_to}: every varied parameter must be a range LO:HI:log (ratios "
                             f"of positive values), but {linear[0]} is not")


def _uncertain(vary_from, exp, params: dict) -> tuple[list, list[str]]:
    """``--vary-from``'s identified parameters and the sentences of those skipped; nothing without ``vary_from``."""
    if vary_from is None:
        return [], []
    mjcf = varied_model.MJCF_PARAM
    if mjcf not in exp.params or not isinstance(exp.params[mjcf].default, str):
        raise ParameterError(f"--vary-from: experiment {exp.name!r} takes no '{mjcf}' parameter, so "
                             "it cannot be given another model; vary-from needs an experiment that loads its "
                             "MJCF from that parameter")
    uncertain, notes = varied_model.read_identified(vary_from)
    varied_model.check_elements(uncertain, str(params[mjcf]))
    return uncertain, notes


def _defaults_run(job: Job, csv_path: Path, columns: list[str], check, engine) -> tuple[dict, bool]:
    """Sample 0's row and whether it ran now: read back from the table, or run on ``engine``, ``check``-ed,
    then appended (a defaults run that ``check`` refuses writes nothing)."""
    rows = table.read(csv_path, columns, texts=TEXTS)
    for row in rows:
        if row["sample"] == "0" and row.get("outcome"):
            table.read_done(csv_path, {0: job.key()}, columns, only=True, texts=TEXTS)
            check(row)
            return row, False
    [(row, seconds, where)] = list(engine.run([job]))
    check(row)
    with table.appending(csv_path, rows, columns) as record:
        record(row, seconds, where)
    return row, True


def _load_experiments(sources: tuple[str, ...]) -> None:
    """An isolated worker's start: the registry with the users' files (one that ends the process here is a
    start failure, one line)."""
    experiments(sources)


def failed_row(job: Job, done) -> dict[str, str]:
    """The row of a run that ended without one: crashed (its process ended), timed out, or raised out of
    the evaluation (``SystemExit``, a ``KeyboardInterrupt`` of its own)."""
    if isinstance(job, JobBatch):  # every run of a batch that ended without its rows
        return [failed_row(one, done) for one in job.jobs]  # type: ignore[return-value]
    outcome, detail = sweep_run.ended(done)
    return {**job.key(), **{k: "" for k in RESULT_COLUMNS}, "passed": "false", "outcome": outcome, "detail": detail}


def _check_defaults(row: dict, plan_: _Plan) -> None:
    """The defaults run must run, carry the metrics the tune names, and a finite value of each one that
    bounds by the defaults' (else a ParameterError)."""
    name = plan_.experiment.name
    if row["outcome"] in ("error", "crashed", "timed out"):
        raise ParameterError(f"the defaults run of {name!r} failed: {row['detail']}")
    metrics = _metric_names(row, [*(v.name for v in plan_.space), *plan_.model_columns])
    for metric in [plan_.minimize, *(m for m, _, _ in plan_.limits)]:
        if metric is not None and metric not in row:
            listed = ", ".join(metrics[:20]) + (", ..." if len(metrics) > 20 else "")
            raise ParameterError(f"experiment {name!r} has no numeric metric {metric!r} (its metrics: {listed})")
    if plan_.log_objective and plan_.minimize is not None and not cell(row, plan_.minimize) > 0:
        raise ParameterError(f"--minimize {plan_.minimize}{LOG}: its logarithm needs a positive metric, but the "
                             f"defaults run of {name!r} has {plan_.minimize} {row[plan_.minimize] or 'none'}")
    for metric, op, limit in plan_.limits:
        if limit is None and row["outcome"] == "pass" and not math.isfinite(cell(row, metric)):
            raise ParameterError(f"--constraint {metric}{op}{DEFAULTS}: the defaults run of {name!r} has no finite "
                                 f"{metric} ({row[metric] or 'none'}) to bound the others by; give a number")


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


def _write_best(out: Path, result: TuneResult, plan_: _Plan) -> None:
    bounds = list(zip(plan_.limits, result.constraints, strict=True))
    shown = [(m, op, f"{v:g}" if given is not None else f"the defaults' {v:g}" if math.isfinite(v) else
              "the defaults' (none: they failed)") for (m, op, given), (_, _, v) in bounds]
    rule = ("the passing run with the lowest " + result.minimize +
            "".join(f", {m} {op} {v}" for m, op, v in shown)) if result.minimize else "none (no --minimize)"
    make_out_dir(out)
    write_json(out / "best.json", {
        "experiment": result.experiment, "search": plan_.search,
        "sampler": plan_.sampler if plan_.search == "optuna" else None, "seed": plan_.seed, "fixed": plan_.fixed,
        "minimize": result.minimize,
        "constraints": [f"{m}{op}{DEFAULTS if v is None else format(v, 'g')}" for m, op, v in plan_.limits],
        "rule": rule,
        "defaults": _summary(result.rows[0], result.space, result.minimize, result.constraints, result.model_columns),
        "best": _summary(result.best, result.space, result.minimize, result.constraints, result.model_columns),
        "outcomes": result.counts(),
    })


def best_params(path: str | Path) -> dict[str, str]:
    """The parameters of the best run a tune chose, as ``--set`` takes them (name -> text): what
    ``crossdyn tune --set-from`` fixes.

    Args:
      path: a tune's ``best.json``, or the folder holding it.

    Raises:
      ParameterError: no readable ``best.json`` of a tune there, or a tune that chose no run.
    """
    file = Path(path)
    if file.is_dir():
        file = file / "best.json"
    try:
        best = json.loads(file.read_text())["best"]
        params = None if best is None else {str(k): float(v) for k, v in best["params"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        why = getattr(exc, "strerror", None) or f"not a tune's best.json ({type(exc).__name__}: {exc})"
        raise ParameterError(f"--set-from {path}: cannot read the best run's parameters from {file}: {why}") from None
    if params is None:
        raise ParameterError(f"--set-from {path}: that tune chose no run (none passed and met its constraints); "
                             "give --set NAME=VALUE or another tune's folder")
    return {k: str(int(v)) if v.is_integer() else repr(v) for k, v in params.items()}
