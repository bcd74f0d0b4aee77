"""What a sweep varies and how it draws: ``--vary NAME=LO:HI[:log]`` (a range) or ``--vary NAME=V1,V2,...`` (a
grid's axis), ``--constraint METRIC<=VALUE`` (or ``<=defaults``), and a blind plan (:func:`plan`: a Latin
hypercube or a grid, :func:`product`)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from ..limits import RUNS_MAX
from ..registry import Param

__all__ = ["Vary", "parse_vary", "parse_constraint", "plan", "product", "SEARCHES", "DEFAULTS"]

SEARCHES = ("lhs", "grid", "optuna")
DEFAULTS = "defaults"  # --constraint METRIC<=defaults: bounded by the defaults run's own value
_SYNTAX = "expected LO:HI or LO:HI:log, or a list of values V1,V2,..."


@dataclass(frozen=True)
class Vary:
    """One parameter swept over ``[low, high]`` (within its own bounds); ``log``: log-uniformly (``low > 0``);
    ``integer``: it takes whole numbers; ``values``: the values a grid takes, as listed (``()``: a range)."""

    name: str
    low: float
    high: float
    log: bool = False
    integer: bool = False
    values: tuple[float | int, ...] = ()

    def value(self, u: float) -> float | int:
        """The value at ``u`` in [0, 1] of the (log) range."""
        if self.log:
            v = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            v = self.low + u * (self.high - self.low)
        v = min(max(v, self.low), self.high)
        return int(round(v)) if self.integer else float(v)

    def grid(self, k: int) -> list[float | int]:
        """``k`` evenly spaced values (geometrically with ``log``), ends included, whole numbers deduplicated;
        the listed values, if any."""
        if self.values:
            return list(self.values)
        values = [self.value(u) for u in np.linspace(0.0, 1.0, k)] if k > 1 else [self.value(0.5)]
        return list(dict.fromkeys(values))


def parse_vary(items: list[str] | list[tuple[str, str]], params: dict[str, Param], experiment: str) -> list[Vary]:
    """``["kp=1:100:log", "kd=0.1,0.5,2", ...]`` (or ``(name, text)`` pairs) -> :class:`Vary` list, validated.

    Raises:
      ParameterError: unknown, repeated or non-numeric parameter, a malformed range or one
        outside the parameter's bounds, ``:log`` with ``low <= 0``, or a list of values with a
        bad or repeated value.
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
        if ":" not in text:
            out[name] = _listed(name, text, param)
            continue
        parts = text.split(":")
        log = len(parts) == 3 and parts[2].strip().lower() == "log"
        try:
            if len(parts) not in (2, 3) or (len(parts) == 3 and not log):
                raise ValueError
            low, high = float(parts[0]), float(parts[1])
        except ValueError:
            raise ParameterError(f"--vary {name}={text}: {_SYNTAX}") from None
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


def _listed(name: str, text: str, param: Param) -> Vary:
    """``--vary NAME=V1,V2,...``: the values of a grid's axis, each within the parameter's bounds."""
    pieces = [piece.strip() for piece in text.split(",") if piece.strip()]
    try:
        [float(piece) for piece in pieces]
    except ValueError:
        pieces = []
    if not pieces:
        raise ParameterError(f"--vary {name}={text}: {_SYNTAX}")
    values = [param.parse(name, piece) for piece in pieces]
    if len(set(values)) < len(values):
        raise ParameterError(f"--vary {name}={text}: a value is listed twice")
    return Vary(name, min(values), max(values), integer=isinstance(param.default, int), values=tuple(values))


def _numeric(param: Param) -> bool:
    return isinstance(param.default, (int, float)) and not isinstance(param.default, bool)


def _fmt(bound) -> str:
    return "-inf" if bound is None else f"{bound:g}"


def parse_constraint(text: str) -> tuple[str, str, float | None]:
    """``"effort<=0.3"`` -> ``("effort", "<=", 0.3)`` (``>=`` too); ``"effort<=defaults"`` -> ``("effort", "<=",
    None)``: bounded by the defaults run's own value (known once it ran).

    Raises:
      ParameterError: not METRIC<=VALUE or METRIC>=VALUE with a finite number or ``defaults``.
    """
    for op in ("<=", ">="):
        if op in text:
            metric, _, value = text.partition(op)
            try:
                number = None if value.strip() == DEFAULTS else float(value)
            except ValueError:
                break
            if metric.strip() and (number is None or math.isfinite(number)):
                return metric.strip(), op, number
            break
    raise ParameterError(f"--constraint {text!r}: expected METRIC<=VALUE or METRIC>=VALUE (a number, or "
                         f"'{DEFAULTS}': the defaults run's value)")


def plan(space: list[Vary], search: str, samples: int, seed: int) -> list[tuple[str, dict]]:
    """The blind runs of a sweep after the defaults: ``(kind, {name: value})`` each.

    A grid takes each listed axis's values and ``k`` evenly spaced values of each range, ``k`` the
    most with ``k^d <= samples`` (``d`` ranges); a list of values is a grid's alone.

    Raises:
      ParameterError: an unknown search, no parameter to vary, too many runs, a list of values
        outside a grid, or a grid with fewer than two values per range.
    """
    if not space:
        raise ParameterError("give at least one --vary NAME=LO:HI[:log]")
    if not 1 <= samples <= RUNS_MAX:
        raise ParameterError(f"--samples must be from 1 to {RUNS_MAX:,}, got {samples:,}")
    refuse_lists(space, search)
    if search == "lhs":
        from scipy.stats import qmc  # late: SciPy's stats costs every command's start-up ~0.5 s

        unit = qmc.LatinHypercube(d=len(space), rng=np.random.default_rng(seed)).random(samples)
        return [("lhs", {v.name: v.value(u) for v, u in zip(space, row, strict=False)}) for row in unit]
    if search == "grid":
        ranges = [v for v in space if not v.values]
        k = int(math.floor(samples ** (1.0 / len(ranges)) + 1e-9)) if ranges else 0
        if ranges and k < 2:
            raise ParameterError(f"a grid over {len(ranges)} parameters needs --samples >= {2 ** len(ranges)} "
                                 f"(two values each), got {samples}")
        return [("grid", values) for values in product({v.name: v.grid(k) for v in space})]
    raise ParameterError(f"unknown search {search!r}; choose from {', '.join(SEARCHES)}")


def refuse_lists(space: list[Vary], search: str) -> None:
    """A list of values is a grid's axis: any other search is refused (a ParameterError)."""
    listed = [v for v in space if v.values]
    if listed and search != "grid":
        raise ParameterError(f"--vary {listed[0].name}: a list of values is an axis of a grid; add --search grid "
                             "(or give a range LO:HI[:log])")


def product(axes: dict[str, list]) -> list[dict]:
    """Every combination of the axes' values, the first axis slowest: ``[{name: value}, ...]``.

    Raises:
      ParameterError: more than :data:`~crossdyn.experiments.core.limits.RUNS_MAX` combinations, refused before
        any is made.
    """
    cells = math.prod(len(v) for v in axes.values())
    if cells > RUNS_MAX:
        raise ParameterError(f"the grid has {cells:,} combinations; at most {RUNS_MAX:,} per sweep")
    names = list(axes)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(axes[n] for n in names))]
