"""One validation of the numbers a check takes, shared by the command line and the Python API.

``--atol nan`` and ``atol=float("nan")`` are refused by the same function with the
same sentence (argparse's one-line error, or a ParameterError).  A tolerance of
``inf`` would pass any function, NaN would fail every one and a negative one
every exact one: each is refused, never reported as a verdict.
"""

from __future__ import annotations

import math
import numbers

from .errors import ParameterError
from .limits import ATOL_MAX, RANGE_MAX, RTOL_MAX, SEED_MAX

__all__ = ["seed", "count", "tolerance", "tolerances", "interval"]


def _whole(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"{what} must be a whole number, got {value!r}")
    return int(value)


def seed(value, what: str = "seed") -> int:
    """A seed: a whole number from 0 to :data:`~crossdyn.experiments.core.limits.SEED_MAX`.

    Raises:
      ParameterError: not a whole number (a float, a bool, a string) or out of range.
    """
    whole = not isinstance(value, bool) and isinstance(value, numbers.Integral)
    if not whole or not 0 <= int(value) <= SEED_MAX:
        raise ParameterError(f"{what} must be a whole number from 0 to {SEED_MAX}, got {value!r}")
    return int(value)


def count(value, low: int, high: int, what: str) -> int:
    """A whole number in ``[low, high]``.

    Raises:
      ParameterError: not a whole number or out of range.
    """
    value = _whole(value, what)
    if not low <= value <= high:
        raise ParameterError(f"{what} must be from {low:,} to {high:,}, got {value:,}")
    return value


def tolerance(value, high: float, what: str) -> float:
    """A finite tolerance in ``[0, high]``.

    Raises:
      ParameterError: not a real number, NaN or infinite, negative, or above ``high``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{what} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ParameterError(f"{what} must be a finite number, got {value}")
    if not 0.0 <= value <= high:
        raise ParameterError(f"{what} must be in [0, {high:g}], got {value:g}")
    return value


def tolerances(atol, rtol, names: tuple[str, str] = ("atol", "rtol")) -> tuple[float, float]:
    """``(atol, rtol)`` of a check, each through :func:`tolerance` (ceilings
    :data:`~crossdyn.experiments.core.limits.ATOL_MAX`, :data:`~crossdyn.experiments.core.limits.RTOL_MAX`)."""
    return tolerance(atol, ATOL_MAX, names[0]), tolerance(rtol, RTOL_MAX, names[1])


def interval(value, what: str) -> tuple[float, float]:
    """A range of sampled values: ``R`` (``(-R, R)``, ``R > 0``) or ``(low, high)`` with ``low < high``.

    Raises:
      ParameterError: not one or two finite numbers, empty, or beyond
        :data:`~crossdyn.experiments.core.limits.RANGE_MAX`.
    """
    pair = (-value, value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else value
    try:
        low, high = (float(v) for v in pair)
    except (TypeError, ValueError):
        raise ParameterError(f"{what} takes R (for -R to R) or two numbers LOW, HIGH, got {value!r}") from None
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ParameterError(f"{what} must be finite, got {value!r}")
    if not low < high:
        raise ParameterError(f"{what} needs LOW < HIGH (R > 0 for -R to R), got {value!r}")
    if max(abs(low), abs(high)) > RANGE_MAX:
        raise ParameterError(f"{what} must lie within [-{RANGE_MAX:g}, {RANGE_MAX:g}], got {value!r}")
    return low, high
