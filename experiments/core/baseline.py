"""Baselines: every experiment's numeric metrics from a good run, and drift from them.

``crossdyn run --save-baseline DIR`` stores ``DIR/NAME.json`` per experiment: the
run's conditions (short, seed, parameters) and its numeric metrics, flattened to
dotted names (``terms.velocity.max_abs_error``, ``per_joint[q1].max_abs_error``).
``crossdyn run --baseline DIR`` compares each numeric metric of the new run with
the stored value:

    |now - baseline| <= abs + rel * |baseline|

with :data:`DEFAULT_TOLERANCE` unless the experiment declares its own for that
metric (``@experiment(..., tolerances={"settling_time_s": 0.02})``: +-2 %).  The
default is tight enough that any real change shows (a 0.1 % slower settling
time drifts) and leaves room only for the last digits of round-off; a
deterministic run on the same machine reproduces its baseline exactly.

A metric outside its tolerance has *drifted*; one in the run but not in the
baseline is *new* (reported, not a failure); one in the baseline but not in the
run is *missing* (a failure: something stopped being measured).  A baseline
taken under other conditions (``--short``, ``--seed``, ``--set``) is a failure
too, named as such, since its numbers are not comparable.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from crossdyn.experiments.core.errors import ParameterError

__all__ = ["Tolerance", "DEFAULT_TOLERANCE", "DEFAULT_RTOL", "DEFAULT_ATOL", "Drift", "Comparison",
           "numeric_metrics", "save", "load", "compare", "report"]

# Relative part: round-off in the last digits passes, a 1e-4 % change does not.
DEFAULT_RTOL = 1e-6
# Absolute part: metrics that are themselves round-off (1e-15 N m errors) may move within it.
DEFAULT_ATOL = 1e-9

# Top-level metrics.json keys that describe the run rather than measure anything.
NOT_MEASURED = frozenset({"experiment", "expected", "short", "seed", "params", "passed", "measured", "error"})
CONDITIONS = ("short", "seed", "params")


@dataclass(frozen=True)
class Tolerance:
    """How far a metric may move from its baseline: ``|now - base| <= abs + rel |base|``.

    Attributes:
      rel: relative part (0.02 = 2 %).
      abs: absolute part, in the metric's own unit.
    """

    rel: float = DEFAULT_RTOL
    abs: float = DEFAULT_ATOL

    @classmethod
    def of(cls, metric: str, value) -> Tolerance:
        """A declared tolerance: a number (relative, with the default absolute part) or a Tolerance."""
        tol = value if isinstance(value, Tolerance) else cls(rel=value) if _is_number(value) else None
        if tol is None or not all(_is_number(x) and math.isfinite(x) and x >= 0 for x in (tol.rel, tol.abs)):
            raise ParameterError(f"tolerance of metric {metric!r}: expected a non-negative number or "
                                 f"Tolerance(rel=..., abs=...), got {value!r}")
        return tol

    def allows(self, baseline: float, now: float) -> bool:
        """True when ``now`` is within tolerance of ``baseline`` (NaN matches only NaN, inf only itself)."""
        if math.isnan(baseline) or math.isnan(now):
            return math.isnan(baseline) and math.isnan(now)
        if math.isinf(baseline) or math.isinf(now):
            return baseline == now
        return abs(now - baseline) <= self.abs + self.rel * abs(baseline)

    def __str__(self) -> str:
        return f"rel {self.rel:g} + abs {self.abs:g}"


DEFAULT_TOLERANCE = Tolerance()


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _as_number(value) -> float | None:
    """A metric value as a float, or None for non-numeric ones (NaN/inf are stored as strings)."""
    if _is_number(value):
        return float(value)
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    return None


def numeric_metrics(metrics: dict) -> dict[str, float]:
    """The numeric metrics of a metrics.json, flattened to dotted names.

    Nested dicts give ``a.b``; list items give ``a[i]``, or ``a[NAME]`` when the
    item is a dict with a ``"name"``.  Booleans, strings and the run's own
    description (:data:`NOT_MEASURED`) are left out.
    """
    flat: dict[str, float] = {}

    def walk(prefix: str, value) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), item)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                label = item["name"] if isinstance(item, dict) and isinstance(item.get("name"), str) else i
                walk(f"{prefix}[{label}]", item)
        else:
            number = _as_number(value)
            if number is not None:
                flat[prefix] = number

    walk("", {k: v for k, v in metrics.items() if k not in NOT_MEASURED})
    return flat


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ParameterError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None


def save(folder: Path, metrics_by_name: dict[str, dict]) -> list[Path]:
    """Write ``folder/NAME.json`` (conditions and numeric metrics) for each experiment.

    Args:
      folder: the baseline folder (created).
      metrics_by_name: each experiment's metrics.json content, by name.

    Returns:
      The files written.
    """
    from crossdyn.experiments.core.results import make_out_dir, write_json

    folder = make_out_dir(folder)
    written = []
    for name, metrics in metrics_by_name.items():
        record = {"experiment": name, **{key: metrics.get(key) for key in CONDITIONS},
                  "metrics": numeric_metrics(metrics)}
        write_json(folder / f"{name}.json", record)
        written.append(folder / f"{name}.json")
    return written


def load(folder: Path, names: list[str]) -> dict[str, dict]:
    """The stored baselines of ``names`` found in ``folder`` (an experiment without one is absent).

    Raises:
      ParameterError: ``folder`` is not a folder, holds a baseline for none of
        ``names``, or one of its files is not valid JSON.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ParameterError(f"--baseline {folder}: no such folder (make one with --save-baseline {folder})")
    found = {name: _read_json(folder / f"{name}.json") for name in names if (folder / f"{name}.json").is_file()}
    if not found:
        raise ParameterError(f"--baseline {folder} holds no baseline for {', '.join(names)} "
                             f"(make one with --save-baseline {folder})")
    for name, record in found.items():
        if not isinstance(record, dict) or not isinstance(record.get("metrics"), dict):
            raise ParameterError(f"{folder / (name + '.json')}: not a crossdyn baseline (no 'metrics' table)")
    return found


@dataclass(frozen=True)
class Drift:
    """One metric outside its tolerance.

    Attributes:
      metric: dotted name.
      baseline, now: the stored and the new value.
      tolerance: the tolerance it was held to.
    """

    metric: str
    baseline: float
    now: float
    tolerance: Tolerance

    @property
    def change(self) -> str:
        """The change, relative when the baseline is non-zero (``+5.00 %``), else absolute."""
        if self.baseline != 0 and math.isfinite(self.baseline) and math.isfinite(self.now):
            return f"{100 * (self.now - self.baseline) / abs(self.baseline):+.3g} %"
        return f"{self.now - self.baseline:+.3g}" if math.isfinite(self.now - self.baseline) else "changed"

    def __str__(self) -> str:
        return (f"{self.metric}: baseline {self.baseline:.6g}, now {self.now:.6g}, change {self.change} "
                f"(tolerance {self.tolerance})")


@dataclass
class Comparison:
    """One experiment's run against its baseline.

    Attributes:
      name: the experiment.
      found: a baseline existed for it.
      drifted, new, missing: the metrics outside tolerance, only in the run, only in the baseline.
      conditions: the run conditions that differ from the baseline's, as
        ``"seed: baseline 0, now 3"``.
    """

    name: str
    found: bool = True
    drifted: list[Drift] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """No drift, nothing missing, same conditions (new metrics are fine)."""
        return not (self.drifted or self.missing or self.conditions)

    @property
    def headline(self) -> str:
        """One short phrase for tables: ``"no drift"``, ``"2 drifted, 1 missing"``, ``"no baseline"``."""
        if not self.found:
            return "no baseline"
        parts = [f"{len(items)} {what}" for items, what in
                 ((self.conditions, "conditions differ"), (self.drifted, "drifted"), (self.missing, "missing"),
                  (self.new, "new")) if items]
        return ", ".join(parts) if parts else "no drift"

    def lines(self) -> list[str]:
        """The details, one line each: conditions, drifted, missing, new."""
        out = [f"run conditions differ: {c}" for c in self.conditions]
        out += [f"drifted {d}" for d in self.drifted]
        out += [f"missing metric {m} (in the baseline, not in this run)" for m in self.missing]
        out += [f"new metric {m} (not in the baseline)" for m in self.new]
        return out


def compare(name: str, metrics: dict, baseline: dict | None, tolerances: dict[str, Tolerance] | None = None
            ) -> Comparison:
    """Compare one experiment's metrics.json content with its stored baseline.

    Args:
      name: the experiment.
      metrics: the run's metrics (metrics.json content).
      baseline: the stored record (:func:`save`'s format), or None when there is none.
      tolerances: the experiment's declared per-metric tolerances.
    """
    if baseline is None:
        return Comparison(name, found=False, new=sorted(numeric_metrics(metrics)))
    tolerances = tolerances or {}
    now, then = numeric_metrics(metrics), baseline["metrics"]
    result = Comparison(name)
    result.conditions = [f"{key}: baseline {baseline.get(key)!r}, now {metrics.get(key)!r}"
                         for key in CONDITIONS if baseline.get(key) != metrics.get(key)]
    for metric, value in now.items():
        if metric not in then:
            result.new.append(metric)
            continue
        stored = _as_number(then[metric])
        tol = tolerances.get(metric, DEFAULT_TOLERANCE)
        if stored is None or not tol.allows(stored, value):
            result.drifted.append(Drift(metric, float("nan") if stored is None else stored, value, tol))
    result.missing = [metric for metric in then if metric not in now]
    return result


def report(comparisons: list[Comparison], folder: Path) -> str:
    """The comparison as text: a header line, then each experiment's details."""
    drifted = [c for c in comparisons if not c.passed]
    lines = [f"baseline {folder}: {len(drifted)} of {len(comparisons)} experiments drifted "
             f"(default tolerance {DEFAULT_TOLERANCE})"]
    for c in comparisons:
        details = c.lines() if c.found else ["no baseline stored; every metric is new"]
        lines += [f"  {c.name}: {line}" for line in details]
    return "\n".join(lines) + "\n"
