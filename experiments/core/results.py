"""Running experiments and writing what they produce.

Layout under the output folder (default ``results/``)::

    DIR/NAME/metrics.json   the experiment's metrics (deterministic for a seed)
    DIR/NAME/timing.json    wall-clock time (kept apart so metrics diff cleanly)
    DIR/NAME/*.png          its plots
    DIR/NAME/error.txt      the traceback, if it crashed
    DIR/summary.json        one row per experiment run
    DIR/summary.md          the same as a table
    DIR/index.html          the report to open in a browser (:mod:`.html_report`)

Each experiment's metrics are written as soon as it finishes, atomically, so a run
that fails halfway keeps everything finished before it.  A run first removes the
previous run's summary.md and index.html and writes them again only when every
experiment has finished, so an interrupted run never leaves an old summary beside
new metrics.  With ``workers > 1`` experiments run in parallel processes; metrics,
summary and report are the same as a serial run's (rows in run order).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
import time
import traceback
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from crossdyn.experiments.core import baseline as baselines
from crossdyn.experiments.core.errors import CrossdynError, ParameterError
from crossdyn.experiments.core.registry import Experiment

__all__ = ["Context", "Outcome", "run", "run_experiments", "make_out_dir", "write_json", "write_text",
           "summary_table"]

# Files an experiment writes that are bookkeeping, not artifacts to show in the report.
BOOKKEEPING = frozenset({"metrics.json", "timing.json", "error.txt"})


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else str(value)  # JSON has no NaN/inf
    if isinstance(value, Path):
        return str(value)
    return value


def make_out_dir(path: str | os.PathLike) -> Path:
    """Create an output folder (and its parents).

    Raises:
      ParameterError: it cannot be created or written (the OS's reason, one line).
    """
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError(f"cannot create output folder {path}: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK):
        raise ParameterError(f"cannot write to output folder {path}")
    return path


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a reader sees the old file or the new one, never a part.

    The text goes to a temporary file of a name unique to this write (process id
    and a random part) in the same folder, then replaces ``path`` in one
    ``os.replace``; so any number of processes may write the same file at once.
    The file is created with ``open(..., "x")``, so it gets the usual permissions
    (``tempfile``'s are private to the owner).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with open(tmp, "x") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json(path: Path, obj) -> None:
    """Write ``obj`` as indented JSON atomically (numpy types converted; see :func:`write_text`)."""
    write_text(path, json.dumps(_jsonable(obj), indent=2) + "\n")


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
      plots: draw plots (``crossdyn tune`` runs an experiment many times and
        draws none: :meth:`savefig` then writes nothing).
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
        from crossdyn.experiments.core.plots import save  # matplotlib only when a figure is saved

        return save(fig, self.out_dir, filename)


@dataclass
class Outcome:
    """One experiment's result as the summary table shows it.

    Attributes:
      name, expected, measured, passed: the summary row (``expected`` with the
        run's parameter values filled in).
      seconds: wall-clock time.
      error: the one-line error of an experiment that crashed or refused its input.
      files: what the experiment wrote in this run (plots, videos, tables),
        relative to the output folder.
      baseline: the comparison with a stored baseline, when one was given.
    """

    name: str
    expected: str
    measured: str
    passed: bool
    seconds: float
    error: str | None = None
    files: list[str] = field(default_factory=list)
    baseline: baselines.Comparison | None = None

    @property
    def ok(self) -> bool:
        """As expected and, when compared with a baseline, without drift."""
        return self.passed and (self.baseline is None or self.baseline.passed)

    def row(self) -> dict:
        """The summary.json row."""
        row = asdict(self)
        if self.baseline is not None:
            row["baseline"] = {"passed": self.baseline.passed, "headline": self.baseline.headline,
                               "lines": self.baseline.lines()}
        return row


def _snapshot(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir() if p.is_file()}


def _run_one(exp: Experiment, out: Path, short: bool, seed: int, overrides: dict, video: bool) -> Outcome:
    out_dir = out / exp.name
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "error.txt").unlink(missing_ok=True)
    params = exp.resolve_params(overrides)
    expected = exp.expected_for(params)
    ctx = Context(exp.name, out_dir, short=short, seed=seed, params=params, video=video)
    before = _snapshot(out_dir)
    start = time.perf_counter()
    error = None
    try:
        metrics = dict(exp.run(ctx))
        if "passed" not in metrics or "measured" not in metrics:
            raise RuntimeError(f"experiment {exp.name!r} returned no 'passed'/'measured' metrics")
    except CrossdynError as exc:
        error = str(exc)
        metrics = {"passed": False, "measured": "error", "error": error}
    except Exception as exc:  # a crash in one experiment must not lose the others
        error = f"{type(exc).__name__}: {exc}"
        (out_dir / "error.txt").write_text(traceback.format_exc())
        metrics = {"passed": False, "measured": "crashed", "error": error}
    seconds = time.perf_counter() - start
    files = sorted(f"{exp.name}/{name}" for name, mtime in _snapshot(out_dir).items()
                   if before.get(name) != mtime and name not in BOOKKEEPING)
    metrics = {"experiment": exp.name, "expected": expected, "short": short, "seed": seed,
               "params": params, **metrics}
    write_json(out_dir / "metrics.json", metrics)
    write_json(out_dir / "timing.json", {"wall_time_s": seconds})
    return Outcome(exp.name, expected, str(metrics["measured"]), bool(metrics["passed"]), seconds, error, files)


def run_experiments(
    selected: list[Experiment],
    out: Path,
    *,
    short: bool = False,
    seed: int = 0,
    overrides: dict[str, str] | None = None,
    video: bool = False,
    progress: bool = False,
    workers: int = 1,
    sources: tuple[str, ...] | list[str] = (),
    baseline: dict[str, dict] | None = None,
    command: str | None = None,
) -> list[Outcome]:
    """Run experiments, writing each one's results as it finishes, then the summary and report.

    ``overrides`` (``--set``) are validated against every selected experiment
    before anything runs, so a typo fails at once rather than after an hour.

    Args:
      selected: the experiments, in run order (the summary's order).
      out: the output folder.
      short, seed, overrides, video: what every experiment's :class:`Context` gets.
      progress: show a progress bar on stderr.
      workers: processes to run experiments in (1: in this process); see
        :mod:`.parallel`.
      sources: users' files and modules the experiments come from (``--from``),
        loaded again by each worker process.
      baseline: stored baselines by experiment name (:func:`.baseline.load`);
        each outcome then carries its :class:`~.baseline.Comparison`.
      command: the command line shown in index.html (default: this process's).
    """
    overrides = overrides or {}
    for exp in selected:
        exp.resolve_params({k: v for k, v in overrides.items() if k in exp.params})
    unknown = [k for k in overrides if not any(k in exp.params for exp in selected)]
    if unknown:
        names = ", ".join(e.name for e in selected)
        raise ParameterError(f"no selected experiment ({names}) has parameter(s) {', '.join(unknown)}")

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("summary.md", "summary.json", "index.html"):  # never an old summary beside new metrics
        (out / stale).unlink(missing_ok=True)
    started = time.time()
    jobs = [(exp, {k: v for k, v in overrides.items() if k in exp.params}) for exp in selected]
    order = {exp.name: i for i, exp in enumerate(selected)}
    done: dict[str, Outcome] = {}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(jobs), desc="experiments", unit="exp", leave=False)
    if workers > 1 and len(jobs) > 1:
        from crossdyn.experiments.core.parallel import run_parallel

        finished = run_parallel(jobs, out, short=short, seed=seed, video=video, workers=workers, sources=sources)
    else:
        finished = (_run_one(exp, out, short, seed, mine, video) for exp, mine in _announce(jobs, bar))
    for outcome in finished:
        if baseline is not None:
            metrics = json.loads((out / outcome.name / "metrics.json").read_text())
            tolerances = next(exp.tolerances for exp, _ in jobs if exp.name == outcome.name)
            outcome.baseline = baselines.compare(outcome.name, metrics, baseline.get(outcome.name), tolerances)
        done[outcome.name] = outcome
        outcomes = sorted(done.values(), key=lambda o: order[o.name])
        write_json(out / "summary.json", [o.row() for o in outcomes])
        if bar is not None:
            bar.set_postfix_str(outcome.name)
            bar.update()
    if bar is not None:
        bar.close()
    outcomes = sorted(done.values(), key=lambda o: order[o.name])
    write_text(out / "summary.md", summary_table(outcomes, markdown=True))
    from crossdyn.experiments.core.html_report import write_report

    write_report(out, outcomes, short=short, seed=seed, overrides=overrides, started=started,
                 command=command if command is not None else shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]))
    return outcomes


def _announce(jobs, bar):
    """The jobs, naming each on the progress bar as it starts (serial runs)."""
    for exp, mine in jobs:
        if bar is not None:
            bar.set_postfix_str(exp.name)
        yield exp, mine


def _cell(text: str) -> str:
    """A Markdown table cell: ``|`` escaped, one line."""
    return " ".join(str(text).split()).replace("|", "\\|")


def summary_table(outcomes: list[Outcome], markdown: bool = False) -> str:
    """The summary table: experiment, expected outcome, measured figure, pass/fail.

    With a baseline comparison a fifth column says whether each drifted.
    """
    header = ("experiment", "expected", "measured", "result")
    rows = [(o.name, o.expected, o.measured, "pass" if o.passed else "FAIL") for o in outcomes]
    if any(o.baseline is not None for o in outcomes):
        header += ("baseline",)
        rows = [r + (o.baseline.headline if o.baseline is not None else "-",) for r, o in zip(rows, outcomes)]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
        return "\n".join(lines) + "\n"
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
) -> list[Outcome]:
    """Run registered experiments from Python, as ``crossdyn run`` does.

    Args:
      names: one experiment name, a list of them, or None for all.
      out: output folder (each experiment writes ``out/NAME/``).
      short: the reduced versions the test suite runs.
      seed: seed of every random draw.
      params: experiment parameters by name, as ``--set`` takes them (values
        may be numbers or strings; each is validated against its ``Param``).
      video: render MP4s where an experiment supports it.
      workers: processes to run them in, as ``--workers``.
      sources: users' experiment files or modules, as ``--from``.

    Returns:
      One :class:`Outcome` per experiment, in run order.

    Raises:
      ParameterError: an unknown experiment or parameter, or a bad value.
    """
    from crossdyn.experiments.core.registry import experiments, get

    if isinstance(names, str):
        names = [names]
    registry = experiments(sources)
    selected = [get(name) for name in names] if names else list(registry.values())
    overrides = {key: str(value) for key, value in (params or {}).items()}
    return run_experiments(selected, Path(out), short=short, seed=seed, overrides=overrides, video=video,
                           workers=workers, sources=sources)
