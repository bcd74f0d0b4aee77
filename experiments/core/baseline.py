"""Baselines: every experiment's numeric metrics from a good run, and drift from them.

``crossdyn run --save-baseline DIR`` stores ``DIR/NAME.json`` per experiment: the
run's conditions and its metrics flattened to dotted names
(``terms.velocity.max_abs_error``, ``per_joint[q1].max_abs_error``).
``crossdyn run --baseline DIR`` compares each numeric metric of a new run with the
stored value, ``|now - baseline| <= abs + rel * |baseline|`` with
:data:`DEFAULT_TOLERANCE` unless the experiment declares its own, and booleans
and text exactly.  A metric outside its tolerance has *drifted*; one only in the
run is *new* (not a failure); one only in the baseline is *missing* (a failure).
A baseline taken under other conditions, a missing baseline or an empty one fail
too, since a gate that compares nothing must not pass (unless ``--allow-new``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

import numpy as np

from .errors import ParameterError
from .files import make_out_dir, write_json

__all__ = ["Tolerance", "DEFAULT_TOLERANCE", "DEFAULT_RTOL", "DEFAULT_ATOL", "Drift", "Comparison",
           "numeric_metrics", "flat_metrics", "refuse_numeric_text", "save", "load", "compare", "report"]

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


def _is_number(value) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _as_number(value) -> float | None:
    """A metric value as a float, or None for others (NaN/inf are stored as strings; booleans are not numbers)."""
    if _is_number(value):
        return float(value)
    if isinstance(value, str) and value in NON_FINITE_TEXTS:
        return float(value)
    return None


# Texts a stored metric takes for a non-finite number (JSON has none).
NON_FINITE_TEXTS = ("nan", "inf", "-inf")


def refuse_numeric_text(metrics, where: str = "") -> None:
    """Refuse a text metric that reads as a number: ``"nan"``, ``"inf"``, ``"-inf"``.

    Stored, such a text and the number it spells are one value, so a change between
    them would compare equal.  List items' ``"name"`` labels are not metrics.

    Raises:
      ParameterError: naming the metric (``where`` is put in front of the message).
    """
    stack: list[tuple[str, object]] = [("", metrics)]
    while stack:
        prefix, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{prefix}.{key}" if prefix else str(key), item) for key, item in value.items()
                         if not (key == "name" and prefix.endswith("]")))
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{prefix}[{i}]", item) for i, item in enumerate(value))
        elif isinstance(value, np.ndarray):  # stored as its list: an array of texts holds texts too
            stack.append((prefix, value.tolist()))
        elif isinstance(value, str) and value in NON_FINITE_TEXTS:
            raise ParameterError(f"{where}metric {prefix!r} is the text {value!r}, which a stored baseline cannot "
                                 f"tell from the number {value}; return float({value!r}) or another text")


def flat_metrics(metrics: dict) -> dict[str, float | bool | str]:
    """The metrics of a metrics.json that a baseline stores, flattened to dotted names.

    Nested dicts give ``a.b``; list items give ``a[i]``, or ``a[NAME]`` for a dict
    with a ``"name"``.  Numbers, booleans and text are kept; ``None`` and
    :data:`NOT_MEASURED` are left out.

    Raises:
      ParameterError: two metrics flatten to the same name.
    """
    flat: dict[str, float | bool | str] = {}
    # Iterative walk: metrics come from user code and may nest deeper than Python's recursion limit.
    stack: list[tuple[str, object]] = [("", {k: v for k, v in metrics.items() if k not in NOT_MEASURED})]
    while stack:
        prefix, value = stack.pop()
        if isinstance(value, dict):
            items = [(f"{prefix}.{key}" if prefix else str(key), item) for key, item in value.items()]
        elif isinstance(value, list):
            items = []
            for i, item in enumerate(value):
                if isinstance(item, dict) and isinstance(item.get("name"), str):  # the name labels the item
                    items.append((f"{prefix}[{item['name']}]", {k: v for k, v in item.items() if k != "name"}))
                else:
                    items.append((f"{prefix}[{i}]", item))
        else:
            number = _as_number(value)
            leaf = number if number is not None else value if isinstance(value, (bool, str)) else None
            if leaf is not None:
                if prefix in flat:
                    raise ParameterError(f"metric {prefix!r} is given twice (a nested key and a dotted name, or two "
                                         "list items of one name); rename one")
                flat[prefix] = leaf
            continue
        stack.extend(reversed(items))
    return flat


def numeric_metrics(metrics: dict) -> dict[str, float]:
    """The numeric metrics of a metrics.json, flattened to dotted names (see :func:`flat_metrics`)."""
    return {k: v for k, v in flat_metrics(metrics).items() if not isinstance(v, (bool, str))}


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except RecursionError:
        raise ParameterError(f"cannot read {path}: its JSON nests too deep") from None
    except (OSError, ValueError) as exc:
        raise ParameterError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None


def save(folder: Path, metrics_by_name: dict[str, dict]) -> list[Path]:
    """Write ``folder/NAME.json`` (conditions and metrics) for each experiment's metrics; returns the files."""
    folder = make_out_dir(folder)
    written = []
    for name, metrics in metrics_by_name.items():
        record = {"experiment": name, **{key: metrics.get(key) for key in CONDITIONS},
                  "metrics": flat_metrics(metrics)}
        write_json(folder / f"{name}.json", record)
        written.append(folder / f"{name}.json")
    return written


def load(folder: Path, names: list[str], *, allow_new: bool = False) -> dict[str, dict]:
    """The stored baselines of ``names`` found in ``folder`` (an experiment without one is absent).

    Raises:
      ParameterError: ``folder`` is not a folder, holds a baseline for none of
        ``names`` (unless ``allow_new``), or one of its files is not valid JSON,
        nests too deep, or is not a table of metrics.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ParameterError(f"--baseline {folder}: no such folder (make one with --save-baseline {folder})")
    found = {name: _read_json(folder / f"{name}.json") for name in names if (folder / f"{name}.json").is_file()}
    if not found and not allow_new:
        raise ParameterError(f"--baseline {folder} holds no baseline for {', '.join(names)} "
                             f"(make one with --save-baseline {folder})")
    for name, record in found.items():
        path = folder / f"{name}.json"
        if not isinstance(record, dict) or not isinstance(record.get("metrics"), dict):
            raise ParameterError(f"{path}: not a crossdyn baseline (no 'metrics' table)")
        bad = next((k for k, v in record["metrics"].items() if not isinstance(v, (int, float, bool, str))), None)
        if bad is not None:
            raise ParameterError(f"{path}: metric {bad!r} is not a number, boolean or text")
    return found


@dataclass(frozen=True)
class Drift:
    """One metric outside its tolerance, or a boolean or text metric that changed.

    Attributes:
      metric: dotted name.
      baseline, now: the stored and the new value.
      tolerance: the tolerance it was held to (None: compared exactly).
    """

    metric: str
    baseline: float | bool | str
    now: float | bool | str
    tolerance: Tolerance | None

    @property
    def numeric(self) -> bool:
        return all(_is_number(v) for v in (self.baseline, self.now))

    @property
    def change(self) -> str:
        """The change, relative when the baseline is non-zero (``+5.00 %``), else absolute; ``to nan`` or
        ``from inf`` when one side is not finite (no number measures it); ``changed`` for booleans and text."""
        base, now = self.baseline, self.now
        if not (_is_number(base) and _is_number(now)):  # not self.numeric, with the two narrowed to numbers
            return "changed"
        if base != 0 and math.isfinite(base) and math.isfinite(now):
            return f"{100 * (now - base) / abs(base):+.3g} %"
        if math.isfinite(now - base):
            return f"{now - base:+.3g}"
        return f"to {now:g}" if not math.isfinite(now) else f"from {base:g}"

    @property
    def change_shown(self) -> str:
        """``", change +5.00 %"``, or nothing when there is no number to give (a NaN or an infinity)."""
        change = self.change
        return "" if change == "changed" else f", change {change}"

    def __str__(self) -> str:
        if not self.numeric:
            return f"{self.metric}: baseline {_shown(self.baseline)}, now {_shown(self.now)} (compared exactly)"
        return (f"{self.metric}: baseline {self.baseline:.6g}, now {self.now:.6g}{self.change_shown} "
                f"(tolerance {self.tolerance})")


def _shown(value) -> str:
    """A boolean or text metric as JSON writes it (``true``, ``"fell"``), at most 80 characters."""
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:70] + '..." (shortened)'


@dataclass
class Comparison:
    """One experiment's run against its baseline.

    Attributes:
      name: the experiment.
      found: a baseline existed for it.
      drifted, new, missing: the metrics outside tolerance (or changed, for
        booleans and text), only in the run, only in the baseline.
      conditions: the run conditions that differ from the baseline's, as
        ``"seed: baseline 0, now 3"``.
      empty: the baseline stores no metric while the run measures some.
      allow_new: a missing or empty baseline is accepted (``--allow-new``).
    """

    name: str
    found: bool = True
    drifted: list[Drift] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    empty: bool = False
    allow_new: bool = False

    @property
    def passed(self) -> bool:
        """No drift, nothing missing, same conditions, and a baseline to compare with (or ``allow_new``)."""
        if (not self.found or self.empty) and not self.allow_new:
            return False
        return not (self.drifted or self.missing or self.conditions)

    @property
    def headline(self) -> str:
        """One short phrase for tables: ``"no drift"``, ``"2 drifted, 1 missing"``, ``"no baseline"``."""
        if not self.found:
            return "no baseline" + ("" if self.allow_new else " (not allowed)")
        parts = ["empty baseline" + ("" if self.allow_new else " (not allowed)")] if self.empty else []
        parts += [f"{len(items)} {what}" for items, what in
                  ((self.conditions, "conditions differ"), (self.drifted, "drifted"), (self.missing, "missing"),
                   (self.new, "new")) if items]
        return ", ".join(parts) if parts else "no drift"

    def lines(self) -> list[str]:
        """The details, one line each: no or empty baseline, conditions, drifted, missing, new."""
        refuse = "" if self.allow_new else "; a run with --baseline fails on it unless --allow-new is given"
        if not self.found:
            return [f"no baseline stored; every metric is new{refuse}"]
        out = [f"the baseline stores no metric; every metric is new{refuse}"] if self.empty else []
        out += [f"run conditions differ: {c}" for c in self.conditions]
        out += [f"drifted {d}" for d in self.drifted]
        out += [f"missing metric {m} (in the baseline, not in this run)" for m in self.missing]
        if not self.empty:
            out += [f"new metric {m} (not in the baseline)" for m in self.new]
        return out


def _same(stored, now, tol: Tolerance) -> bool:
    """Numbers within ``tol``; booleans and text exactly (a number never equals a boolean or text)."""
    a, b = _as_number(stored), _as_number(now)
    if a is not None and b is not None:
        return tol.allows(a, b)
    if a is not None or b is not None:
        return False
    return type(stored) is type(now) and stored == now


def compare(name: str, metrics: dict, baseline: dict | None, tolerances: dict[str, Tolerance] | None = None,
            *, allow_new: bool = False) -> Comparison:
    """Compare one experiment's metrics.json content with its stored baseline.

    Args:
      name: the experiment.
      metrics: the run's metrics (metrics.json content).
      baseline: the stored record (:func:`save`'s format), or None when there is none.
      tolerances: the experiment's declared per-metric tolerances (booleans and text compare exactly).
      allow_new: accept a missing or empty baseline (the comparison then passes).

    Raises:
      ParameterError: two of the run's metrics flatten to one name.
    """
    now = flat_metrics(metrics)
    if baseline is None:
        return Comparison(name, found=False, new=sorted(now), allow_new=allow_new)
    tolerances = tolerances or {}
    then = baseline["metrics"]
    result = Comparison(name, allow_new=allow_new, empty=not then and bool(now))
    result.conditions = [f"{key}: baseline {baseline.get(key)!r}, now {metrics.get(key)!r}"
                         for key in CONDITIONS if baseline.get(key) != metrics.get(key)]
    for metric, value in now.items():
        if metric not in then:
            result.new.append(metric)
            continue
        stored = then[metric]
        a, b = _as_number(stored), _as_number(value)
        if a is not None and b is not None:  # numbers (NaN/inf stored as text included): within tolerance
            tol = tolerances.get(metric, DEFAULT_TOLERANCE)
            if not tol.allows(a, b):
                result.drifted.append(Drift(metric, a, b, tol))
        elif not _same(stored, value, DEFAULT_TOLERANCE):  # booleans and text: exactly
            result.drifted.append(Drift(metric, stored, value, None))
    result.missing = [metric for metric in then if metric not in now]
    return result


def report(comparisons: list[Comparison], folder: Path) -> str:
    """The comparison as text: a header line, then each experiment's details."""
    drifted = [c for c in comparisons if not c.passed]
    lines = [f"baseline {folder}: {len(drifted)} of {len(comparisons)} experiments drifted "
             f"(default tolerance {DEFAULT_TOLERANCE})"]
    for c in comparisons:
        lines += [f"  {c.name}: {line}" for line in c.lines()]
    return "\n".join(lines) + "\n"
