"""What a controller is, declared: the kinds the closed loop runs, as ``typing.Protocol`` classes.

The loop asks which kind a controller is (:func:`kind_of`) once, before the first
step, and runs it as that kind:

- :class:`Controller`: a plain controller, ``controller(t, obs) -> controls`` (``(nu,)`` or a
  dict by actuator name), each return checked;
- :class:`CommandWriter`: one that writes its command itself, ``write_command(t, sensed, command)
  -> bool`` (False: stop as diverged), called unchecked, so that compiled controllers run at the
  physics' speed;
- :class:`CompiledController`: a command writer with a C step function (``step_address``,
  ``failed``), run in the compiled loop when nothing else of the run needs Python between steps.

Any kind may also declare :class:`Starting` (``start(model, data)`` before the first step),
:class:`HasControlPeriod` (the period it was designed for: the loop runs at it unless told
otherwise) and :class:`ChecksControlPeriod` (told the period the loop runs at, before it starts).
A class need not inherit from these: having the methods is being of the kind.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import mujoco
import numpy as np

from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.loop.trace import Observation

__all__ = ["Controller", "CommandWriter", "CompiledController", "Starting", "HasControlPeriod",
           "ChecksControlPeriod", "kind_of", "KINDS"]


@runtime_checkable
class Controller(Protocol):
    """A plain controller: the actuators' controls at time ``t`` (s) from what the loop observed."""

    def __call__(self, t: float, obs: Observation) -> Any:
        """``(nu,)`` controls, or a dict by actuator name (missing ones 0)."""


@runtime_checkable
class CommandWriter(Protocol):
    """A controller that writes its command in place, unchecked: the loop trusts it to write finite controls."""

    def write_command(self, t: float, sensed: np.ndarray, command: np.ndarray) -> bool:
        """Write ``command`` ``(nu,)`` from ``sensed`` ``(nsensordata,)`` at ``t`` (s); False ends the run as
        diverged."""


@runtime_checkable
class CompiledController(CommandWriter, Protocol):
    """A command writer with a C step ``int step(double t)`` the compiled loop calls between MuJoCo's steps.

    Given to several simulations of a batch at once, it runs in each on a copy of its own
    (``copy.copy``: a compiled step keeps its state in its library's globals).
    """

    def step_address(self, sensed: np.ndarray, command: np.ndarray) -> int:
        """The address of this run's step function, reading ``sensed`` and writing ``command`` (bound here)."""

    def failed(self, result: int, t: float, command: np.ndarray) -> None:
        """Raise the error of a step result other than 1 (fine) at ``t`` (s)."""


@runtime_checkable
class Starting(Protocol):
    """A controller told the run's model and data before its first step (to bind views, reset its state)."""

    def start(self, model: mujoco.MjModel, data: mujoco.MjData) -> None: ...


@runtime_checkable
class HasControlPeriod(Protocol):
    """A controller designed for a control period: the loop runs at it unless given ``control_dt``."""

    @property
    def control_dt(self) -> float | None:
        """The period designed for, s; None: designed for none (continuous)."""


@runtime_checkable
class ChecksControlPeriod(Protocol):
    """A controller told the period the loop will run it at (a continuous regulator warns when its poles are
    beyond it)."""

    def check_rate(self, control_dt: float) -> object: ...


# The kinds the loop runs, most specific first: a compiled controller writes its command too.
KINDS: tuple[type, ...] = (CompiledController, CommandWriter, Controller)


def kind_of(controller: object, what: str = "controller") -> type:
    """The kind of :data:`KINDS` ``controller`` is (the first it fits).

    Raises:
      ParameterError: it is none of them (naming ``what`` and its type).
    """
    for kind in KINDS:
        if isinstance(controller, kind):
            return kind
    raise ParameterError(f"{what} must be a function (t, obs) -> controls, got {type(controller).__name__}")
