"""Jump state machine of the wheel-legged biped (after a thesis chapter on
the biped's jump, with lift-off detection).

Phases, in order::

    balance -> crouch -> thrust -> retract -> flight -> landing -> balance

- crouch: legs pulled to ``alpha_crouch`` (the bottom of the stroke) while balancing;
- thrust: every hip motor at full torque until the legs reach ``alpha_takeoff``
  (the extension phase of :mod:`analytic.biped.jump`);
- retract: legs pulled up hard to ``alpha_flight``, lifting the wheels;
- flight: entered when the accelerometer reads free fall (specific force below
  ``freefall_accel``); legs extend to ``alpha_land`` to meet the ground;
- landing: entered on touchdown (specific force above ``touchdown_accel``); the
  virtual-model height loop takes the legs from ``alpha_land`` down to the stance
  height, so the whole stroke absorbs the impact, for ``landing_time`` while
  balance resumes.

The machine only decides phases and leg targets; :mod:`controllers.biped`
turns them into torques.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from math import nan

import numpy as np

from crossdyn.analytic.biped import five_bar

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
      alpha_crouch, alpha_takeoff: the thrust stroke (crossdyn's default 190 -> 250 deg).
      alpha_flight: leg angle held in the air (retracted).
      alpha_land: leg angle at touchdown.
      crouch_time: time allowed to reach the crouch.
      thrust_torque: hip torque during thrust, N m; ``None`` is the hip motors' limit
        (:class:`~crossdyn.controllers.biped.BipedController` fills it in).
      freefall_accel, touchdown_accel: accelerometer thresholds for lift-off and touchdown.
      retract_timeout: longest retraction before giving up on flight (the robot never left).
      min_flight: touchdown is not believed before this long in the air: pulling the
        legs up shakes the body enough to trip the accelerometer threshold.
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
    """Steps through the jump phases from time and the robot's estimate.

    Attributes:
      plan: the :class:`JumpPlan`.
      phase: the current phase.
      transitions: ``[(t, phase), ...]`` every phase change, for metrics and plots.
    """

    plan: JumpPlan
    phase: Phase = Phase.BALANCE
    transitions: list = field(default_factory=list)
    _since: float = 0.0
    _done: bool = False

    def _enter(self, t: float, phase: Phase) -> None:
        self.phase, self._since = phase, t
        self.transitions.append((float(t), phase.value))

    def update(self, t: float, alpha_mean: float, accel: float) -> Phase:
        """Advance the machine; returns the phase for this control step.

        Args:
          t: time, s.  alpha_mean: mean leg angle, rad.  accel: |specific force|, m/s^2.
        """
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
