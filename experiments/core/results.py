"""Running experiments and writing what they produce.

Layout under the output folder (default ``results/``)::

    DIR/NAME/metrics.json   the experiment's metrics (deterministic for a seed)
    DIR/NAME/timing.json    wall-clock time (kept apart so metrics diff cleanly)
    DIR/NAME/*.png          its plots
    DIR/NAME/error.txt      the traceback, if it crashed
    DIR/summary.json        one row per experiment run
    DIR/summary.md          the same as a table

Each experiment's metrics are written as soon as it finishes, atomically, so a run
that fails halfway keeps everything finished before it.
"""

from __future__ import annotations

import json
import math
import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from crossdyn.experiments.core.errors import CrossdynError, ParameterError
from crossdyn.experiments.core.registry import Experiment

__all__ = ["Context", "Outcome", "run", "run_experiments", "make_out_dir", "write_json", "summary_table"]


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


def write_json(path: Path, obj) -> None:
    """Write ``obj`` as indented JSON atomically (numpy types converted)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(_jsonable(obj), indent=2) + "\n")
    os.replace(tmp, path)


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
    """

    name: str
    out_dir: Path
    short: bool = False
    seed: int = 0
    params: dict = field(default_factory=dict)
    video: bool = False

    def savefig(self, fig, filename: str) -> Path:
        """Save a matplotlib figure as ``out_dir/filename`` and return the path."""
        from crossdyn.experiments.core.plots import save  # matplotlib only when a figure is saved

        return save(fig, self.out_dir, filename)


@dataclass
class Outcome:
    """One experiment's result as the summary table shows it."""

    name: str
    expected: str
    measured: str
    passed: bool
    seconds: float
    error: str | None = None


def _run_one(exp: Experiment, out: Path, short: bool, seed: int, overrides: dict, video: bool) -> Outcome:
    out_dir = out / exp.name
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "error.txt").unlink(missing_ok=True)
    params = exp.resolve_params(overrides)
    ctx = Context(exp.name, out_dir, short=short, seed=seed, params=params, video=video)
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
    metrics = {"experiment": exp.name, "expected": exp.expected, "short": short, "seed": seed,
               "params": params, **metrics}
    write_json(out_dir / "metrics.json", metrics)
    write_json(out_dir / "timing.json", {"wall_time_s": seconds})
    return Outcome(exp.name, exp.expected, str(metrics["measured"]), bool(metrics["passed"]), seconds, error)


def run_experiments(
    selected: list[Experiment],
    out: Path,
    *,
    short: bool = False,
    seed: int = 0,
    overrides: dict[str, str] | None = None,
    video: bool = False,
    progress: bool = False,
) -> list[Outcome]:
    """Run experiments in order, writing each one's results as it finishes.

    ``overrides`` (``--set``) are validated against every selected experiment
    before anything runs, so a typo fails at once rather than after an hour.
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
    outcomes: list[Outcome] = []
    iterator = selected
    if progress:
        from tqdm import tqdm

        iterator = tqdm(selected, desc="experiments", unit="exp", leave=False)
    for exp in iterator:
        if progress:
            iterator.set_postfix_str(exp.name)
        mine = {k: v for k, v in overrides.items() if k in exp.params}
        outcomes.append(_run_one(exp, out, short, seed, mine, video))
        write_json(out / "summary.json", [o.__dict__ for o in outcomes])
    (out / "summary.md").write_text(summary_table(outcomes, markdown=True))
    return outcomes


def summary_table(outcomes: list[Outcome], markdown: bool = False) -> str:
    """The summary table: experiment, expected outcome, measured figure, pass/fail."""
    header = ("experiment", "expected", "measured", "result")
    rows = [(o.name, o.expected, o.measured, "pass" if o.passed else "FAIL") for o in outcomes]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
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

    Returns:
      One :class:`Outcome` per experiment, in run order.

    Raises:
      ParameterError: an unknown experiment or parameter, or a bad value.
    """
    from crossdyn.experiments.core.registry import experiments, get

    if isinstance(names, str):
        names = [names]
    selected = [get(name) for name in names] if names else list(experiments().values())
    overrides = {key: str(value) for key, value in (params or {}).items()}
    return run_experiments(selected, Path(out), short=short, seed=seed, overrides=overrides, video=video)
