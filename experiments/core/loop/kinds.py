"""What a controller is, declared: the kinds the closed loop runs, as ``typing.Protocol`` classes.

The loop asks which of :data:`KINDS` a controller is (:func:`kind_of`) once, before the first
step, and runs it as that kind.  Any kind may also be :class:`Starting`,
:class:`HasControlPeriod` or :class:`ChecksControlPeriod`.  A class need not inherit from
these: having the methods is being of the kind.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import mujoco
import numpy as np

from ..errors import ParameterError
from .trace import Observation

__all__ = ["Controller", "CommandWriter", "CompiledController", "Starting", "HasControlPeriod",
           "ChecksControlPeriod", "kind_of", "KINDS"]


@runtime_checkable
class Controller(Protocol):
    """A plain controller: the controls at ``t`` (s), ``(nu,)`` or a dict by actuator name, each return checked."""

    def __call__(self, t: float, obs: Observation) -> Any: ...


@runtime_checkable
class CommandWriter(Protocol):
    """A controller that writes ``command`` ``(nu,)`` in place from ``sensed`` at ``t`` (s), called unchecked so
    that compiled controllers run at the physics' speed; returning False ends the run as diverged."""

    def write_command(self, t: float, sensed: np.ndarray, command: np.ndarray) -> bool: ...


@runtime_checkable
class CompiledController(CommandWriter, Protocol):
    """A command writer whose C step ``int step(double t)`` (at ``step_address``, 1: fine) the compiled loop calls
    between MuJoCo's steps; ``failed`` raises the error of another result.  Given to several simulations of a
    batch, it runs in each on a copy of its own (``copy.copy``: its state is its library's globals)."""

    def step_address(self, sensed: np.ndarray, command: np.ndarray) -> int: ...

    def failed(self, result: int, t: float, command: np.ndarray) -> None: ...


@runtime_checkable
class Starting(Protocol):
    """A controller told the run's model and data before its first step (to bind views, reset its state)."""

    def start(self, model: mujoco.MjModel, data: mujoco.MjData) -> None: ...


@runtime_checkable
class HasControlPeriod(Protocol):
    """A controller designed for a control period (s; None: continuous): the loop runs at it unless told."""

    @property
    def control_dt(self) -> float | None: ...


@runtime_checkable
class ChecksControlPeriod(Protocol):
    """A controller told the period the loop runs it at (a continuous regulator warns if its poles are beyond)."""

    def check_rate(self, control_dt: float) -> object: ...


# The kinds the loop runs, most specific first: a compiled controller writes its command too.
KINDS: tuple[type, ...] = (CompiledController, CommandWriter, Controller)


def kind_of(controller: object, what: str = "controller") -> type:
    """The first of :data:`KINDS` that ``controller`` is.

    Raises:
      ParameterError: it is none of them (naming ``what`` and its type).
    """
    for kind in KINDS:
        if isinstance(controller, kind):
            return kind
    raise ParameterError(f"{what} must be a function (t, obs) -> controls, got {type(controller).__name__}")
