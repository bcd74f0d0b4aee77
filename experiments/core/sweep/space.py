"""What a sweep varies and how it draws: ``--vary NAME=LO:HI[:log]``, a blind plan (:func:`plan`: a Latin
hypercube or a grid), and named values (:func:`parse_values`, :func:`product`, :func:`log_hypercube`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.limits import RUNS_MAX as SAMPLES_MAX
from crossdyn.experiments.core.registry import Param

__all__ = ["Vary", "parse_vary", "parse_constraint", "plan", "parse_values", "parse_bounds", "product",
           "log_hypercube", "SEARCHES", "SAMPLES_MAX"]

SEARCHES = ("lhs", "grid", "optuna")


@dataclass(frozen=True)
class Vary:
    """One parameter swept over ``[low, high]`` (within its own bounds); ``log``: log-uniformly (``low > 0``);
    ``integer``: it takes whole numbers."""

    name: str
    low: float
    high: float
    log: bool = False
    integer: bool = False

    def value(self, u: float) -> float | int:
        """The value at ``u`` in [0, 1] of the (log) range."""
        if self.log:
            v = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            v = self.low + u * (self.high - self.low)
        v = min(max(v, self.low), self.high)
        return int(round(v)) if self.integer else float(v)

    def grid(self, k: int) -> list[float | int]:
        """``k`` evenly spaced values (geometrically with ``log``), ends included; whole numbers deduplicated."""
        values = [self.value(u) for u in np.linspace(0.0, 1.0, k)] if k > 1 else [self.value(0.5)]
        return list(dict.fromkeys(values))


def parse_vary(items: list[str] | list[tuple[str, str]], params: dict[str, Param], experiment: str) -> list[Vary]:
    """``["kp=1:100:log", ...]`` (or ``(name, text)`` pairs) -> :class:`Vary` list, validated.

    Raises:
      ParameterError: unknown, repeated or non-numeric parameter, a malformed range or one
        outside the parameter's bounds, or ``:log`` with ``low <= 0``.
    """
    out: dict[str, Vary] = {}
    for item in items:
        name, _, text = item.partition("=") if isinstance(item, str) else (item[0], "=", item[1])
        name, text = name.strip(), text.strip()
        if name not in params:
            known = ", ".join(k for k, p in params.items() if _numeric(p)) or "none"
            raise ParameterError(f"experiment {experiment!r} has no parameter {name!r} to vary (its numeric "
                                 f"parameters: {known})")
        param = params[name]
        if not _numeric(param):
            raise ParameterError(f"--vary {name}: a {type(param.default).__name__} parameter cannot be swept "
                                 "(only numbers can)")
        if name in out:
            raise ParameterError(f"--vary {name} given twice")
        parts = text.split(":")
        log = len(parts) == 3 and parts[2].strip().lower() == "log"
        try:
            if len(parts) not in (2, 3) or (len(parts) == 3 and not log):
                raise ValueError
            low, high = float(parts[0]), float(parts[1])
        except ValueError:
            raise ParameterError(f"--vary {name}={text}: expected LO:HI or LO:HI:log") from None
        if not (math.isfinite(low) and math.isfinite(high)) or low > high:
            raise ParameterError(f"--vary {name}={text}: need finite LO <= HI")
        bounds = (param.low, param.high)
        if param.low is not None and low < param.low or param.high is not None and high > param.high:
            raise ParameterError(f"--vary {name}={text}: outside the parameter's range [{_fmt(bounds[0])}, "
                                 f"{_fmt(bounds[1])}] ({param.help})")
        if log and low <= 0:
            raise ParameterError(f"--vary {name}={text}: a log range needs LO > 0")
        out[name] = Vary(name, low, high, log, isinstance(param.default, int))
    return list(out.values())


def _numeric(param: Param) -> bool:
    return isinstance(param.default, (int, float)) and not isinstance(param.default, bool)


def _fmt(bound) -> str:
    return "-inf" if bound is None else f"{bound:g}"


def parse_constraint(text: str) -> tuple[str, str, float]:
    """``"effort<=0.3"`` -> ``("effort", "<=", 0.3)`` (``>=`` too).

    Raises:
      ParameterError: not METRIC<=VALUE or METRIC>=VALUE with a finite number.
    """
    for op in ("<=", ">="):
        if op in text:
            metric, _, value = text.partition(op)
            try:
                number = float(value)
            except ValueError:
                break
            if metric.strip() and math.isfinite(number):
                return metric.strip(), op, number
            break
    raise ParameterError(f"--constraint {text!r}: expected METRIC<=VALUE or METRIC>=VALUE")


def plan(space: list[Vary], search: str, samples: int, seed: int) -> list[tuple[str, dict]]:
    """The blind runs of a sweep after the defaults: ``(kind, {name: value})`` each.

    Raises:
      ParameterError: an unknown search, no parameter to vary, too many runs, or a grid
        with fewer than two values per parameter.
    """
    if not space:
        raise ParameterError("give at least one --vary NAME=LO:HI[:log]")
    if not 1 <= samples <= SAMPLES_MAX:
        raise ParameterError(f"--samples must be from 1 to {SAMPLES_MAX:,}, got {samples:,}")
    if search == "lhs":
        from scipy.stats import qmc

        unit = qmc.LatinHypercube(d=len(space), rng=np.random.default_rng(seed)).random(samples)
        return [("lhs", {v.name: v.value(u) for v, u in zip(space, row, strict=False)}) for row in unit]
    if search == "grid":
        k = int(math.floor(samples ** (1.0 / len(space)) + 1e-9))
        if k < 2:
            raise ParameterError(f"a grid over {len(space)} parameters needs --samples >= {2 ** len(space)} "
                                 f"(two values each), got {samples}")
        return [("grid", values) for values in product({v.name: v.grid(k) for v in space})]
    raise ParameterError(f"unknown search {search!r}; choose from {', '.join(SEARCHES)}")


def _numbers(name: str, text: str) -> list[float]:
    """``a,b,c`` or ``lo:hi:n`` (n evenly spaced values) as floats."""
    text = text.strip()
    if not text:
        raise ParameterError(f"{name}=: empty list of values")
    try:
        if ":" in text:
            lo, hi, n = text.split(":")
            count = int(n)
            if count < 1:
                raise ValueError
            if count > SAMPLES_MAX:
                raise ParameterError(f"{name}={text}: at most {SAMPLES_MAX:,} values per axis, got {count:,}")
            return [float(v) for v in np.linspace(float(lo), float(hi), count)]
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ParameterError(f"{name}={text}: expected numbers 'a,b,c' or 'lo:hi:count'") from None


def parse_values(items: list[tuple[str, str]], check) -> dict[str, list[float]]:
    """``[("q_theta", "10,100,1000"), ...]`` -> ``{"q_theta": [10.0, 100.0, 1000.0]}``, each value ``check``-ed.

    Args:
      items: ``(name, text)`` pairs, text ``a,b,c`` or ``lo:hi:n`` (n evenly spaced values).
      check: ``check(name, value) -> value``: refuses an unknown name or a value out of range.
    """
    out: dict[str, list[float]] = {}
    for name, text in items:
        if name in out:
            raise ParameterError(f"{name} given twice")
        values = _numbers(name, text)
        if not values:
            raise ParameterError(f"{name}={text}: empty list of values")
        out[name] = [check(name, v) for v in values]
    return out


def parse_bounds(items: list[tuple[str, str]], check) -> dict[str, tuple[float, float]]:
    """``[("q_x", "1:1000")]`` -> ``{"q_x": (1.0, 1000.0)}``: log-scale bounds, both > 0, ``check``-ed.

    Raises:
      ParameterError: not ``low:high``, ``0 < low <= high`` broken, or ``check``'s refusal.
    """
    out = {}
    for name, text in items:
        try:
            lo, hi = (float(v) for v in text.split(":"))
        except ValueError:
            raise ParameterError(f"{name}={text}: expected a range 'low:high'") from None
        lo, hi = check(name, lo), check(name, hi)
        if not 0 < lo <= hi:
            raise ParameterError(f"{name}={text}: need 0 < low <= high (sampled on a log scale)")
        out[name] = (lo, hi)
    return out


def product(axes: dict[str, list[float]], what: str = "the grid", unit: str = "combinations") -> list[dict[str, float]]:
    """Every combination of the axes' values, the first axis slowest: ``[{name: value}, ...]``.

    Raises:
      ParameterError: more than :data:`SAMPLES_MAX` combinations (``what`` and ``unit`` name them).
    """
    import itertools

    cells = math.prod(len(v) for v in axes.values())
    if cells > SAMPLES_MAX:
        raise ParameterError(f"{what} has {cells:,} {unit}; at most {SAMPLES_MAX:,} per sweep")
    names = list(axes)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(axes[n] for n in names))]


def log_hypercube(bounds: dict[str, tuple[float, float]], samples: int, seed: int) -> list[dict[str, float]]:
    """A Latin hypercube of ``samples`` draws, log-uniform within ``bounds`` (name -> ``(low, high)``, > 0).

    Raises:
      ParameterError: ``samples`` outside 1..:data:`SAMPLES_MAX`.
    """
    if not 1 <= samples <= SAMPLES_MAX:
        raise ParameterError(f"--samples must be from 1 to {SAMPLES_MAX:,}, got {samples:,}")
    from scipy.stats import qmc

    names = list(bounds)
    lo = np.log10([bounds[n][0] for n in names])
    hi = np.log10([bounds[n][1] for n in names])
    unit = qmc.LatinHypercube(d=len(names), rng=np.random.default_rng(seed)).random(samples)
    return [{n: float(v) for n, v in zip(names, row, strict=True)} for row in 10.0 ** (lo + unit * (hi - lo))]
