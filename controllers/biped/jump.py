"""Jump state machine of the wheel-legged biped, with lift-off detection.

``balance -> crouch -> thrust -> retract -> flight -> landing -> balance``: crouch to the stroke's bottom,
thrust at full torque to ``alpha_takeoff``, retract the legs; flight begins when the accelerometer reads free
fall (legs extend to ``alpha_land``), landing on touchdown (the virtual-model height loop absorbs the impact
over the whole stroke).  The machine only decides phases and leg targets; ``BipedController`` makes the torques.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from math import nan

import numpy as np

from ...analytic.biped import five_bar

__all__ = ["Phase", "JumpPlan", "JumpStateMachine"]


class Phase(str, enum.Enum):
    BALANCE = "balance"
    CROUCH = "crouch"
    THRUST = "thrust"
    RETRACT = "retract"
    FLIGHT = "flight"
    LANDING = "landing"


@dataclass(frozen=True)
class JumpPlan:
    """When and how to jump (angles in rad, times in s, accelerations in m/s^2).

    Attributes:
      start: time the jump is triggered.
      alpha_crouch, alpha_takeoff: the thrust stroke (default 190 -> 250 deg).
      alpha_flight, alpha_land: leg angle held in the air (retracted), and at touchdown.
      crouch_time: time allowed to reach the crouch.
      thrust_torque: hip torque during thrust, N m; ``None``: the motors' limit (``BipedController`` fills it).
      freefall_accel, touchdown_accel: accelerometer thresholds for lift-off and touchdown.
      retract_timeout: longest retraction before giving up on flight (the robot never left).
      min_flight: no touchdown believed before this long in the air (retracting shakes the accelerometer).
      landing_time: compliant landing before normal balance.
    """

    start: float = 1.0
    alpha_crouch: float = five_bar.STROKE[0]
    alpha_takeoff: float = five_bar.STROKE[1]
    alpha_flight: float = np.radians(195.0)
    alpha_land: float = np.radians(235.0)
    crouch_time: float = 0.6
    thrust_torque: float | None = None
    freefall_accel: float = 4.0
    touchdown_accel: float = 14.0
    retract_timeout: float = 0.3
    min_flight: float = 0.1
    landing_time: float = 0.5


@dataclass
class JumpStateMachine:
    """Steps through the jump phases of ``plan`` from time and the robot's estimate; ``transitions`` is
    ``[(t, phase), ...]`` of every phase change."""

    plan: JumpPlan
    phase: Phase = Phase.BALANCE
    transitions: list = field(default_factory=list)
    _since: float = 0.0
    _done: bool = False

    def _enter(self, t: float, phase: Phase) -> None:
        self.phase, self._since = phase, t
        self.transitions.append((float(t), phase.value))

    def update(self, t: float, alpha_mean: float, accel: float) -> Phase:
        """Advance the machine at ``t`` s, mean leg angle ``alpha_mean`` rad and |specific force| ``accel`` m/s^2;
        returns the phase for this control step."""
        p, dwell = self.plan, t - self._since
        if self.phase is Phase.BALANCE and not self._done and t >= p.start:
            self._enter(t, Phase.CROUCH)
        elif self.phase is Phase.CROUCH and dwell >= p.crouch_time:
            self._enter(t, Phase.THRUST)
        elif self.phase is Phase.THRUST and alpha_mean >= p.alpha_takeoff:
            self._enter(t, Phase.RETRACT)
        elif self.phase is Phase.RETRACT:
            if accel < p.freefall_accel:
                self._enter(t, Phase.FLIGHT)
            elif dwell >= p.retract_timeout:  # never left the ground: land in place
                self._enter(t, Phase.LANDING)
        elif self.phase is Phase.FLIGHT and dwell >= p.min_flight and accel > p.touchdown_accel:
            self._enter(t, Phase.LANDING)
        elif self.phase is Phase.LANDING and dwell >= p.landing_time:
            self._done = True
            self._enter(t, Phase.BALANCE)
        return self.phase

    def leg_target(self) -> tuple[str, float]:
        """``("torque", tau)`` in thrust, ``("vmc", nan)`` in balance and landing, else ``("alpha", target)``.

        Raises:
          ValueError: in thrust with a plan whose ``thrust_torque`` is None (not filled in).
        """
        p, phase = self.plan, self.phase
        if phase is Phase.THRUST:
            if p.thrust_torque is None:
                raise ValueError("JumpPlan.thrust_torque is None (the motors' limit): BipedController fills it in; "
                                 "a state machine driven on its own needs a torque, N m")
            return "torque", p.thrust_torque
        if phase is Phase.CROUCH:
            return "alpha", p.alpha_crouch
        if phase is Phase.RETRACT:
            return "alpha", p.alpha_flight
        if phase is Phase.FLIGHT:
            return "alpha", p.alpha_land
        return "vmc", nan  # balance and landing

    @property
    def airborne(self) -> bool:
        """Wheels presumed off the ground: wheel torques are useless (and spin the wheels)."""
        return self.phase in (Phase.RETRACT, Phase.FLIGHT)
