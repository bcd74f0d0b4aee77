"""Running experiments and writing what they produce.

Layout under the output folder (default ``results/``)::

    DIR/NAME/metrics.json   the experiment's metrics (deterministic for a seed)
    DIR/NAME/timing.json    wall-clock time (kept apart so metrics diff cleanly)
    DIR/NAME/*.png          its plots
    DIR/NAME/error.txt      the traceback (or how its process ended), if it crashed or timed out
    DIR/summary.json        one row per experiment run
    DIR/summary.md          the same as a table
    DIR/index.html          the report to open in a browser (:mod:`.html_report`)

Experiments run in worker processes (:mod:`.isolation`), so one that exits,
segfaults or hangs past its ``timeout`` is recorded as ``crashed`` or ``timed
out`` and the others go on.  Results flow one way: nothing reads back a file the
run wrote.  Each experiment's folder is emptied when it starts and its metrics
are written atomically when it ends; summary.md and index.html are removed first
and written only when every experiment has finished, so an interrupted run never
leaves an old summary beside new metrics.
"""

from __future__ import annotations

import errno
import json
import os
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from . import baseline as baselines
from . import isolation, user_code
from .errors import CrossdynError, ParameterError
from .figures import save
from .files import jsonable, write_json, write_text
from .html_report import write_report
from .registry import Experiment, experiments, get, loadable
from .safe_text import one_line

__all__ = ["Context", "Outcome", "run", "run_experiments",
           "summary_table", "check_metrics", "experiment_pool", "longest_first"]

# A full disk or quota: the machine's fault, not the experiment's; the run stops (exit 2).
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
# Characters of one cell of the terminal's summary table (the Markdown table and metrics.json keep all).
_TERMINAL_CELL = 200
# Files an experiment writes that are bookkeeping, not artifacts to show in the report.
BOOKKEEPING = frozenset({"metrics.json", "timing.json", "error.txt"})


@dataclass
class Context:
    """What an experiment gets from the runner.

    Attributes:
      name: the experiment's name.
      out_dir: its own output folder (created).
      short: run a reduced version (fewer samples, shorter horizon) for tests.
      seed: the seed for every random draw.
      params: parameter values (defaults updated with ``--set``).
      video: render an MP4 where the experiment supports it.
      plots: draw plots (``crossdyn tune`` draws none: :meth:`savefig` then writes nothing).
    """

    name: str
    out_dir: Path
    short: bool = False
    seed: int = 0
    params: dict = field(default_factory=dict)
    video: bool = False
    plots: bool = True

    def savefig(self, fig, filename: str) -> Path:
        """Save a matplotlib figure as ``out_dir/filename`` (unless ``plots`` is off) and return the path."""
        if not self.plots:
            return self.out_dir / filename

        return save(fig, self.out_dir, filename)


@dataclass
class Outcome:
    """One experiment's result: the summary row, and what the baselines, JUnit and the report need.

    Attributes:
      name, expected, measured, passed: the summary row (``expected`` with the
        run's parameter values filled in).
      seconds: wall-clock time.
      error: the one-line error of an experiment that did not return a result.
      files: what the experiment wrote in this run, relative to the output folder.
      baseline: the comparison with a stored baseline, when one was given.
      metrics: the metrics.json content (the run's conditions included).
      detail: the full text behind ``error`` (a traceback), as error.txt holds it.
    """

    name: str
    expected: str
    measured: str
    passed: bool
    seconds: float
    error: str | None = None
    files: list[str] = field(default_factory=list)
    baseline: baselines.Comparison | None = None
    metrics: dict = field(default_factory=dict, repr=False)
    detail: str | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        """As expected and, when compared with a baseline, without drift."""
        return self.passed and (self.baseline is None or self.baseline.passed)

    def row(self) -> dict:
        """The summary.json row."""
        row = {key: getattr(self, key) for key in ("name", "expected", "measured", "passed", "seconds", "error",
                                                  "files")}
        row["baseline"] = None if self.baseline is None else {
            "passed": self.baseline.passed, "headline": self.baseline.headline, "lines": self.baseline.lines()}
        return row


def check_metrics(name: str, returned) -> dict:
    """What an experiment returned, checked, as the JSON-ready metrics to store: the one place that judges it.

    Only a real boolean ``passed`` is a verdict: the text ``"False"``, a NaN, a
    number or None is refused, so no junk can count as a pass.

    Raises:
      ParameterError: naming the experiment and what is wrong with its metrics.
    """
    where = f"experiment {name!r}"
    if not isinstance(returned, Mapping):
        raise ParameterError(f"{where} returned a {type(returned).__name__}; expected a dict of metrics with "
                             "'passed' (True or False) and 'measured' (one line of text)")
    missing = [key for key in ("passed", "measured") if key not in returned]
    if missing:
        raise ParameterError(f"{where} returned no {' and no '.join(repr(k) for k in missing)} metric")
    passed = returned["passed"]
    if not isinstance(passed, (bool, np.bool_)):
        raise ParameterError(f"{where} returned 'passed': {one_line(repr(passed), 60)} (a {type(passed).__name__}); "
                             "only True or False is a verdict")
    if not isinstance(returned["measured"], str):
        raise ParameterError(f"{where} returned 'measured': a {type(returned['measured']).__name__}; "
                             "expected one line of text")
    try:
        # the text "inf" would be stored as the number inf is (what describes the run is no metric)
        baselines.refuse_numeric_text({k: v for k, v in returned.items() if k not in baselines.NOT_MEASURED})
        metrics = jsonable(dict(returned))
        json.dumps(metrics)
        baselines.flat_metrics(metrics)
    except RecursionError:
        raise ParameterError(f"{where} returned metrics nested too deep to store") from None
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{where} returned a metric JSON cannot store: {exc}") from None
    except ParameterError as exc:
        raise ParameterError(f"{where}: {exc}") from None
    return metrics


def _describe(exc: BaseException) -> str:
    """An exception from an experiment, one line (a ``sys.exit`` or a raised ``KeyboardInterrupt`` said as such)."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r}); an experiment must return its metrics, not end the run"
    if isinstance(exc, KeyboardInterrupt):
        return "raised KeyboardInterrupt itself (no Ctrl-C was pressed)"
    return f"{type(exc).__name__}: {exc}"


def _execute(exp: Experiment, ctx: Context, real_interrupt=lambda exc: False) -> dict:
    """Run one experiment and judge what it returned, catching everything it raises.

    Returns plain data a worker can send back: ``{"status", "metrics", "error",
    "detail", "seconds"}``.  ``real_interrupt(exc)`` tells a real Ctrl-C, which
    propagates, from a ``KeyboardInterrupt`` the experiment raised.
    """
    me = os.getpid()
    start = time.perf_counter()
    metrics = error = detail = None
    try:
        try:
            returned = exp.run(ctx)
        finally:
            if os.getpid() != me:  # a forked child of the experiment: it has no result to give
                os._exit(0)
        metrics, status = check_metrics(exp.name, returned), "ok"
    except CrossdynError as exc:
        status, error, detail = "error", str(exc), str(exc)
    except BaseException as exc:  # a crash in one experiment must not lose the others
        if real_interrupt(exc):
            raise
        if isinstance(exc, OSError) and exc.errno in _DISK_FULL:  # the machine's fault: the run cannot go on
            return {"status": "disk full", "error": [exc.errno, exc.strerror, exc.filename], "seconds": 0.0}
        status, error, detail = "crashed", _describe(exc), traceback.format_exc()
    return {"status": status, "metrics": metrics, "error": error, "detail": detail,
            "seconds": time.perf_counter() - start}


@dataclass(frozen=True)
class _Job:
    """One experiment to run, as plain data a worker process can receive."""

    name: str
    out_dir: str  # absolute: an experiment that changes the working folder moves nothing
    short: bool
    seed: int
    params: dict
    video: bool


def _run_job(job: _Job) -> dict:
    """In a worker process: run the named experiment (see :func:`_execute`)."""
    exp = experiments().get(job.name)
    if exp is None:
        return {"status": "error", "metrics": None, "seconds": 0.0, "detail": None,
                "error": f"experiment {job.name!r} is not registered in a fresh process; register it in a file or "
                         "module given to --from"}
    ctx = Context(job.name, Path(job.out_dir), short=job.short, seed=job.seed, params=job.params, video=job.video)
    return _execute(exp, ctx)


def _init_worker(sources: tuple[str, ...]) -> None:
    """A worker's start: load the registry (built-in, entry points, ``--from`` sources) once."""
    experiments(sources)


def experiment_pool(workers: int, sources: tuple[str, ...] | list[str] = (),
                    start_timeout: float | None = None) -> isolation.Pool:
    """The pool of worker processes a run's experiments go to; each loads the registry with ``sources``."""
    return isolation.Pool(workers, initializer=_init_worker, initargs=(tuple(sources),),
                          start_timeout=start_timeout)


# A worker may take this long to start on top of a time limit: importing MuJoCo is slow on a loaded CI machine.
START_ALLOWANCE = 60.0


def pool_with_sources_imported(sources: tuple[str, ...] | list[str], workers: int = 1, *,
                               timeout: float | None = None, option: str = "--from") -> isolation.Pool:
    """An :func:`experiment_pool` whose first worker has imported users' ``sources``.

    Call it before importing the files in this process: a file that ends the
    worker while being imported, or is still importing after ``timeout`` +
    :data:`START_ALLOWANCE` seconds, is a one-line error here instead of ending or
    holding this process.  The caller runs on the pool or terminates it.

    Args:
      sources: ``.py`` paths or module names.
      workers: the pool's size (one worker is started now).
      timeout: the run's time limit per experiment, s, or None for none.
      option: how the user gave the sources, for the message (``--from``).

    Raises:
      ParameterError: as above, or the file's own import error, said by the worker.
    """
    start_timeout = None if timeout is None else timeout + START_ALLOWANCE
    pool = experiment_pool(workers, sources, start_timeout=start_timeout)
    given = f"{option} {', '.join(sources)}".strip()
    try:
        pool.start()
    except isolation.WorkerStartError as exc:
        pool.terminate()
        if exc.hung:
            raise ParameterError(f"{given}: still importing after {start_timeout:g} s (the time limit {timeout:g} s "
                                 f"plus {START_ALLOWANCE:g} s for a worker to start), so it was stopped; a file of "
                                 "experiments must define them, not wait") from None
        raise ParameterError(f"{given}: {exc} while importing it; a file of experiments must define them, not end "
                             "the process") from None
    except BaseException:
        pool.terminate()
        raise
    return pool


def _from_done(done: isolation.Done) -> dict:
    """The payload of a finished worker task; a crash or timeout said in words."""
    if done.status == isolation.OK:
        return done.value
    if done.status == isolation.TIMED_OUT:
        return {"status": "timed out", "metrics": None, "seconds": done.seconds, "detail": None,
                "error": f"timed out {done.how} (--timeout); its process was stopped"}
    if done.status == isolation.CRASHED:
        return {"status": "crashed", "metrics": None, "seconds": done.seconds, "detail": None,
                "error": f"crashed: its process ended ({done.how}) without returning a result"}
    if done.error is None:  # status raised: the worker sent the exception back (isolation.Done)
        raise RuntimeError(f"worker task ended {done.status!r} without its exception")
    return {"status": "crashed", "metrics": None, "seconds": done.seconds, "detail": done.traceback or None,
            "error": _describe(done.error)}


def _fresh(out_dir: Path) -> None:
    """Make ``out_dir`` and empty it of files, so that every file in it afterwards is this run's."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in out_dir.iterdir():
        if path.is_symlink() or path.is_file():
            path.unlink()


def _outcome(job: _Job, expected: str, payload: dict, out: Path) -> Outcome:
    """Write one experiment's metrics.json, timing.json (and error.txt) and return its Outcome.

    Raises:
      OSError: the disk is full (the run stops: exit 2), or writing its files failed.
    """
    out_dir = Path(job.out_dir)
    status, error = payload["status"], payload["error"]
    if status == "disk full":  # name the experiment's folder when the OS named no file
        raise OSError(error[0], error[1], error[2] or job.out_dir)
    if status == "ok":
        measured, metrics = payload["metrics"]["measured"], payload["metrics"]
    else:
        measured = "error" if status == "error" else status
        metrics = {"passed": False, "measured": measured, "error": error}
    metrics = {"experiment": job.name, "expected": expected, "short": job.short, "seed": job.seed,
               "params": job.params, **metrics}
    files = sorted(f"{job.name}/{p.name}" for p in out_dir.iterdir() if p.is_file() and p.name not in BOOKKEEPING)
    write_json(out_dir / "metrics.json", metrics)
    write_json(out_dir / "timing.json", {"wall_time_s": payload["seconds"]})
    detail = payload["detail"] or error
    if status not in ("ok", "error"):
        write_text(out_dir / "error.txt", detail if detail.endswith("\n") else detail + "\n")
    return Outcome(job.name, expected, measured, bool(metrics["passed"]), payload["seconds"],
                   None if error is None else one_line(error, None), files, metrics=metrics, detail=detail)


def _registered(selected: list[Experiment], sources) -> bool:
    experiments(sources)
    return all(loadable(exp) for exp in selected)


def run_experiments(
    selected: list[Experiment],
    out: Path,
    *,
    short: bool = False,
    seed: int = 0,
    overrides: dict[str, str] | None = None,
    video: bool = False,
    progress: bool | Callable[[str], None] = False,
    workers: int = 1,
    sources: tuple[str, ...] | list[str] = (),
    baseline: dict[str, dict] | None = None,
    allow_new: bool = False,
    command: str | None = None,
    timeout: float | None = None,
    isolate: bool | None = None,
    pool: isolation.Pool | None = None,
) -> list[Outcome]:
    """Run experiments, writing each one's results as it finishes, then the summary and report.

    ``overrides`` are validated against every selected experiment before
    anything runs, so a typo fails at once.  A real Ctrl-C stops the run and its
    workers (``KeyboardInterrupt``).

    Args:
      selected: the experiments, in run order (the summary's order).
      out: the output folder.
      short, seed, overrides, video: what every experiment's :class:`Context` gets.
      progress: show a progress bar on stderr (True), or give each finished experiment's line to this
        function (``[3/12] jump: pass (4.2 s)``).
      workers: worker processes at once.
      sources: users' files and modules the experiments come from (``--from``).
      baseline: stored baselines by experiment name (:func:`.baseline.load`).
      allow_new: a missing or empty baseline passes (``--allow-new``).
      command: the command line shown in index.html (default: this process's).
      timeout: seconds each experiment may run (None: no limit).
      isolate: run in worker processes.  None (default): when every experiment
        is registered; one made on the fly in Python then runs in this process.
      pool: a started :func:`experiment_pool` to use (and close) instead of a new one.

    Raises:
      ParameterError: a bad ``--set``; an unregistered experiment with
        ``workers > 1``, ``timeout`` or ``isolate=True``.
    """
    overrides = overrides or {}
    for exp in selected:
        exp.resolve_params({k: v for k, v in overrides.items() if k in exp.params})
    unknown = [k for k in overrides if not any(k in exp.params for exp in selected)]
    if unknown:
        names = ", ".join(e.name for e in selected)
        raise ParameterError(f"no selected experiment ({names}) has parameter(s) {', '.join(unknown)}")
    registered = pool is not None or _registered(selected, sources)
    isolate = registered if isolate is None else isolate
    if not registered and (isolate or workers > 1 or timeout is not None):
        loose = next(exp.name for exp in selected if not _registered([exp], sources))
        raise ParameterError(f"experiment {loose!r} is not registered, so a worker process cannot load it; "
                             "register it with @experiment in a file or module given to --from, or run it with "
                             "1 worker and no timeout")

    out = Path(os.path.abspath(out))  # absolute: an experiment that changes the working folder moves nothing
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("summary.md", "summary.json", "index.html"):  # never an old summary beside new metrics
        (out / stale).unlink(missing_ok=True)
    started = time.time()
    jobs, expected = {}, {}
    for exp in selected:
        params = exp.resolve_params({k: v for k, v in overrides.items() if k in exp.params})
        jobs[exp.name] = _Job(exp.name, str(out / exp.name), short, seed, params, video)
        expected[exp.name] = exp.expected_for(params)
    order = {exp.name: i for i, exp in enumerate(selected)}
    tolerances = {exp.name: exp.tolerances for exp in selected}
    done: dict[str, Outcome] = {}
    finished = _in_workers(jobs, out, workers, sources, timeout, pool) if isolate else _in_this_process(selected, jobs)
    bar = None
    if progress is True:
        bar = tqdm(total=len(jobs), desc="experiments", unit="exp", leave=False)
    try:
        for name, payload in finished:
            outcome = _outcome(jobs[name], expected[name], payload, out)
            if baseline is not None:
                outcome.baseline = _compare(outcome, baseline.get(name), tolerances[name], allow_new)
            done[name] = outcome
            outcomes = sorted(done.values(), key=lambda o: order[o.name])
            write_json(out / "summary.json", [o.row() for o in outcomes])
            if bar is not None:
                bar.set_postfix_str(one_line(name, 40))
                bar.update()
            elif callable(progress):
                result = ("pass" if outcome.passed else "FAIL") + (f", {one_line(outcome.error, 80)}"
                                                                   if outcome.error else "")
                progress(f"[{len(done)}/{len(jobs)}] {name}: {result} ({outcome.seconds:.1f} s)")
    finally:
        finished.close()  # stops the workers now, whatever ended the loop
        if bar is not None:
            bar.close()
    outcomes = sorted(done.values(), key=lambda o: order[o.name])
    write_text(out / "summary.md", summary_table(outcomes, markdown=True))

    write_report(out, outcomes, short=short, seed=seed, overrides=overrides, started=started,
                 command=command if command is not None else shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]))
    return outcomes


def _compare(outcome: Outcome, stored: dict | None, tolerances, allow_new: bool) -> baselines.Comparison:
    """The outcome against its baseline; an experiment that did not finish compares as having no metrics."""
    try:
        return baselines.compare(outcome.name, outcome.metrics, stored, tolerances, allow_new=allow_new)
    except ParameterError:  # checked when the experiment returned; only a crashed one's metrics get here
        return baselines.Comparison(outcome.name, found=stored is not None, allow_new=allow_new)


def _in_workers(jobs: dict[str, _Job], out: Path, workers: int, sources, timeout, pool):
    """``(name, payload)`` of each job as it finishes, from worker processes started now."""
    names = list(jobs)
    if workers > 1 and len(names) > 1:
        names = longest_first(names, out)  # read before the folders are emptied
    pool = pool if pool is not None else experiment_pool(min(workers, len(names)), sources)
    pool.start(pool.workers, wait=False)
    return _from_pool(pool, jobs, names, timeout)


def _from_pool(pool: isolation.Pool, jobs: dict[str, _Job], names: list[str], timeout):
    with pool:  # closed (its workers and whatever they forked gone) however this ends
        for name in names:
            _fresh(Path(jobs[name].out_dir))
            pool.submit(_run_job, jobs[name], timeout=timeout, key=name)
        for finished in pool.as_completed():
            yield finished.key, _from_done(finished)


def longest_first(names: list[str], out: Path) -> list[str]:
    """``names`` by the wall time each took in the previous run in ``out``, longest first (never timed: first)."""

    def last_time(name: str) -> float:
        try:
            return float(json.loads((out / name / "timing.json").read_text())["wall_time_s"])
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return float("inf")  # never timed: could be long, start it early

    return sorted(names, key=last_time, reverse=True)


def _in_this_process(selected: list[Experiment], jobs: dict[str, _Job]):
    """``(name, payload)`` of each job, run here, in order (experiments made on the fly in Python)."""
    home = os.getcwd()
    for exp in selected:
        job = jobs[exp.name]
        _fresh(Path(job.out_dir))
        ctx = Context(job.name, Path(job.out_dir), short=job.short, seed=job.seed, params=job.params,
                      video=job.video)
        with user_code.ctrl_c_watch() as watch:
            payload = _execute(exp, ctx, real_interrupt=lambda exc: isinstance(exc, KeyboardInterrupt)
                               and watch.pressed)
        os.chdir(home)
        yield exp.name, payload


def _cell(text: str) -> str:
    """A Markdown table cell: one line, control codes escaped, ``|`` escaped; the full text."""
    return one_line(text, None).replace("|", "\\|")


def summary_table(outcomes: list[Outcome], markdown: bool = False) -> str:
    """The summary table: experiment, expected, measured, pass/fail (and baseline drift, when compared).

    The terminal table's cells are one line each, shortened; the Markdown one keeps the full text.
    """
    header: tuple[str, ...] = ("experiment", "expected", "measured", "result")
    rows: list[tuple[str, ...]] = [(o.name, o.expected, o.measured, "pass" if o.passed else "FAIL") for o in outcomes]
    if any(o.baseline is not None for o in outcomes):
        header += ("baseline",)
        rows = [r + (o.baseline.headline if o.baseline is not None else "-",)
                for r, o in zip(rows, outcomes, strict=True)]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
        return "\n".join(lines) + "\n"
    rows = [tuple(one_line(c, _TERMINAL_CELL) for c in r) for r in rows]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in rows]
    return "\n".join(lines) + "\n"


def run(
    names: str | list[str] | None = None,
    *,
    out: str | os.PathLike = "results",
    short: bool = False,
    seed: int = 0,
    params: dict | None = None,
    video: bool = False,
    workers: int = 1,
    sources: tuple[str, ...] | list[str] = (),
    timeout: float | None = None,
) -> list[Outcome]:
    """Run registered experiments from Python, as ``crossdyn run`` does.

    Args:
      names: one experiment name, a list of them, or None for all.
      out: output folder (each experiment writes ``out/NAME/``).
      short, seed, video, workers, sources, timeout: as ``--short``, ``--seed``,
        ``--video``, ``--workers``, ``--from``, ``--timeout``.
      params: experiment parameters by name, as ``--set`` takes them (numbers or strings).

    Returns:
      One :class:`Outcome` per experiment, in run order.

    Raises:
      ParameterError: an unknown experiment or parameter, or a bad value.
    """
    if isinstance(names, str):
        names = [names]
    registry = experiments(sources)
    selected = [get(name) for name in names] if names else list(registry.values())
    overrides = {key: str(value) for key, value in (params or {}).items()}
    return run_experiments(selected, Path(out), short=short, seed=seed, overrides=overrides, video=video,
                           workers=workers, sources=sources, timeout=timeout)
