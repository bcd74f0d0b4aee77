"""The control period in effect: the rate a controller will run at, where crossdyn knows it before the run.

A regulator designed at the rate its loop runs is a discrete design; one designed
without knowing it is continuous, and a continuous design asks the loop for more than a
slow rate carries.  crossdyn knows the rate in two places:

- inside ``with control_period(dt):``, where a script or an experiment states its loop's
  period once, before designing (``regulator`` designs at it and ``simulate`` runs at
  it unless told otherwise);
- inside a run of ``simulate``, at the run's ``control_dt`` (a controller that designs
  in its ``start`` designs at the rate it runs).

Outside both, :func:`period_in_effect` is None: crossdyn does not know the rate a
controller will run at (``simulate``'s ``control_dt`` is chosen per run, after the
design), and ``regulator`` designs continuously unless given ``dt``.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator

from ..errors import ParameterError

__all__ = ["control_period", "period_in_effect"]

_PERIOD: contextvars.ContextVar[float | None] = contextvars.ContextVar("crossdyn_control_period", default=None)


@contextlib.contextmanager
def control_period(dt: float) -> Iterator[float]:
    """State the control period, s, of the loops designed and run inside the block (the context's: per thread).

    Raises:
      ParameterError: ``dt`` is not a positive, finite time.
    """
    if isinstance(dt, bool) or not isinstance(dt, (int, float)) or not (math.isfinite(dt) and dt > 0):
        raise ParameterError(f"control_period: dt must be a positive control period in s, got {dt!r}")
    token = _PERIOD.set(float(dt))
    try:
        yield float(dt)
    finally:
        _PERIOD.reset(token)


def period_in_effect() -> float | None:
    """The control period crossdyn knows the controller will run at, s, or None where it knows none."""
    return _PERIOD.get()
