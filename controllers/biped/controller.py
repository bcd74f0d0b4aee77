"""The wheel-legged biped's whole controller: balance, steering, legs, jump.

One call per control step turns an ``Estimate`` and a :class:`Reference` into motor torques: the wheels get
the scheduled LQR balance (:mod:`.balance`) plus the yaw PD's differential (:mod:`.steering`), balance first;
the hips get virtual-model control of height and roll (:mod:`.virtual_model`) or the jump's targets
(:mod:`crossdyn.controllers.biped.jump`).  Velocity tracking moves ``x_ref`` at the wanted speed, so the LQR holds a
moving set-point.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from math import nan
from typing import NamedTuple

import numpy as np

from ...analytic.biped import five_bar
from ...analytic.biped.wheeled_pendulum import PendulumParams, linearize_pendulum
from ..lqr import GainSchedule, schedule
from .balance import balance_torque
from .estimation import Estimate, LegGeometry
from .jump import JumpPlan, JumpStateMachine, Phase
from .steering import YawGains, split_wheel_torque, yaw_gains, yaw_torque
from .virtual_model import LegGains, hip_torques, virtual_forces

__all__ = ["BipedGains", "Reference", "Command", "BipedController", "design", "wheel_loops", "yaw_inertia", "DEFAULT_Q",
           "DEFAULT_R"]

# Hand-picked: position and speed so the robot returns to its spot within ~2 s, pitch heavily so a
# 10 deg tilt is caught at once; R sets torque use.
DEFAULT_Q = (20.0, 10.0, 100.0, 1.0)  # x (1/m^2), xd (s^2/m^2), theta (1/rad^2), thetad (s^2/rad^2)
DEFAULT_R = 1.0  # 1/(N m)^2
# The gain schedule covers the stroke and a margin either side, rad: the legs pass
# below the stroke when a landing compresses them and above it at take-off.
SCHEDULE_MARGIN = (np.radians(5.0), np.radians(10.0))

# The leg loops' PD gains per unit of what each loop moves, (wn^2, 2 zeta wn), so a heavier or larger robot
# gets proportionally stiffer legs; the values keep the gains the built-in 6 kg robot was tuned with.
HEIGHT_PD = (400.0 / 3.0, 10.0)  # per kg of body mass M: wn 11.5 rad/s, zeta 0.43 -> N/m, N s/m
ROLL_PD = (625.0, 50.0)  # per kg m^2 of M D^2 / 4 (the body's mass at the legs' lateral lever): wn 25 rad/s, zeta 1
ALPHA_PD = (976.5625, 26.041666666666668)  # per kg m^2 of M l2^2 (the body on a thigh's lever): wn 31 rad/s, zeta 0.42
SWING_PD = (1302.0833333333333, 39.0625)  # per kg m^2 of M l2^2: wn 36 rad/s, zeta 0.54


@dataclass(frozen=True)
class BipedGains:
    """All gains of the biped controller.

    Attributes:
      schedule, yaw, legs: LQR gains over leg length; yaw PD; virtual-model PD (height, roll).
      alpha_kp, alpha_kd: leg-angle PD of the jump phases, N m/rad, N m s/rad.
      swing_kp, swing_kd: PD on each leg's ``alpha_front - alpha_rear``, keeping the axle under the hip
        line (the balance model's rigid leg), N m/rad, N m s/rad.
      Q, R: the LQR weights the schedule was designed with.
    """

    schedule: GainSchedule
    yaw: YawGains
    legs: LegGains
    alpha_kp: float
    alpha_kd: float
    swing_kp: float
    swing_kd: float
    Q: tuple = DEFAULT_Q
    R: float = DEFAULT_R


@dataclass
class Reference:
    """What the robot is asked to do: forward speed (m/s), heading (rad), leg height (m).

    ``height=None`` holds the legs at the height they have when the controller
    starts (the robot's own stance), so no height is typed twice.
    """

    velocity: float = 0.0
    yaw: float = 0.0
    height: float | None = None


class Command(NamedTuple):
    """Motor torques, N m: ``wheels (left, right)``; ``hips`` per motor (left front,
    left rear, right front, right rear); ``legs (left, right)``, the common leg
    torque before the swing correction; the jump phase.  A named tuple of floats:
    one is made every control step."""

    wheels: tuple[float, float]
    hips: tuple[float, float, float, float]
    legs: tuple[float, float] = (0.0, 0.0)
    phase: str = Phase.BALANCE.value
    wheel_total: float = 0.0  # the LQR's T before the split (for logging)


def yaw_inertia(params: PendulumParams) -> float:
    """Torque per yaw acceleration of the steering model: ``r (m D + I D / r^2 + 2 J_yaw / D)``, N m s^2."""
    p = params
    return p.r * (p.m * p.D + p.I * p.D / p.r**2 + 2 * p.J_yaw / p.D)


def design(params: PendulumParams, geometry: LegGeometry, Q=DEFAULT_Q, R=DEFAULT_R,
           alphas=None, yaw_frequency: float = 6.0, legs: LegGains | None = None) -> BipedGains:
    """Design every gain from ``params`` and ``geometry`` (the leg PDs scale with the robot, see above).

    Args:
      params: pendulum parameters (from ``experiments.biped.model.biped_params``).
      geometry: five-bar lengths and wheel radius.
      Q: LQR state weights (diagonal); R: input weight.
      alphas: leg angles (rad) to tabulate the schedule at; default 16 across the stroke widened by
        :data:`SCHEDULE_MARGIN`.
      yaw_frequency: yaw loop natural frequency, rad/s (critically damped).
      legs: virtual-model gains; default :data:`HEIGHT_PD` and :data:`ROLL_PD` scaled by the robot.
    """
    if alphas is None:
        alphas = np.linspace(five_bar.STROKE[0] - SCHEDULE_MARGIN[0], five_bar.STROKE[1] + SCHEDULE_MARGIN[1], 16)
    alphas = np.asarray(alphas)
    heights = five_bar.height(alphas, geometry.l1, geometry.l2, geometry.l3)
    sched = schedule(functools.partial(linearize_pendulum, params), heights, np.diag(Q), np.atleast_2d(R), degree=3)
    roll_inertia = params.M * params.D**2 / 4
    legs = legs or LegGains(kp_height=params.M * HEIGHT_PD[0], kd_height=params.M * HEIGHT_PD[1],
                            kp_roll=roll_inertia * ROLL_PD[0], kd_roll=roll_inertia * ROLL_PD[1])
    leg_inertia = params.M * geometry.l2**2
    return BipedGains(sched, yaw_gains(yaw_inertia(params), yaw_frequency, 1.0), legs,
                      alpha_kp=leg_inertia * ALPHA_PD[0], alpha_kd=leg_inertia * ALPHA_PD[1],
                      swing_kp=leg_inertia * SWING_PD[0], swing_kd=leg_inertia * SWING_PD[1], Q=tuple(Q), R=float(R))


def wheel_loops(params: PendulumParams, gains: BipedGains, length: float,
                K=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The wheels' loops as the controller is designed: ``(A (6, 6), B (6, 2), K (2, 6))``, ``u = -K x``.

    The state is ``[x, xd, theta, thetad, psi, psid]``: the wheeled pendulum's (rigid massless legs of
    ``length``) and the heading ``psi`` about +z with its rate, whose model is the steering model's pure
    inertia, ``psi_dd = (T_R - T_L) / J_eff`` (:func:`yaw_inertia`).  The inputs are ``(T_L, T_R)``, N m:
    the pendulum takes their sum ``T``.  The law is the controller's at rest: ``T = -K_lqr x`` (the
    schedule's row at ``length`` unless ``K`` (1, 4) is given), the yaw PD's ``dT = T_L - T_R = kp psi +
    kd psid``, each wheel half of ``T +- dT``.  Its closed-loop poles are the LQR's and the yaw PD's.
    """
    A4, B4 = linearize_pendulum(params, length)
    k = np.ravel(gains.schedule(length) if K is None else K)
    j = yaw_inertia(params)
    A = np.zeros((6, 6))
    A[:4, :4], A[4, 5] = A4, 1.0
    B = np.zeros((6, 2))
    B[:4, 0] = B[:4, 1] = B4[:, 0]
    B[5] = [-1.0 / j, 1.0 / j]
    yaw = 0.5 * np.array([gains.yaw.kp, gains.yaw.kd])
    return A, B, np.vstack([np.concatenate([0.5 * k, -yaw]), np.concatenate([0.5 * k, yaw])])


@dataclass
class BipedController:
    """Balance + steering + legs (+ an optional jump); call once per control step.

    Attributes:
      params, geometry, gains: pendulum parameters, leg geometry, :class:`BipedGains`.
      dt: control period, s (integrates the position reference).
      hip_limit, wheel_limit: motor torque limits, N m.
      jump: a jump plan, or None.
      height_rate_limit: the fastest the leg-height set-point moves, m/s (a step would ask the virtual
        spring for a force that throws the robot off the ground).
    """

    params: PendulumParams
    geometry: LegGeometry
    gains: BipedGains
    dt: float
    hip_limit: float
    wheel_limit: float
    jump: JumpPlan | None = None
    height_rate_limit: float = 0.3
    x_ref: float = 0.0
    height_ref: float | None = None
    machine: JumpStateMachine | None = field(default=None, init=False)

    def __post_init__(self):
        if self.jump is not None and self.jump.thrust_torque is None:  # full thrust: the motors' limit
            self.jump = replace(self.jump, thrust_torque=self.hip_limit)
        self.machine = JumpStateMachine(self.jump) if self.jump is not None else None

    def __call__(self, t: float, est: Estimate, ref: Reference) -> Command:
        """Torques for one control step (plain floats throughout: it runs at 1 kHz)."""
        alpha_mean = 0.5 * (est.alpha[0] + est.alpha[1])
        machine = self.machine
        phase = machine.update(t, alpha_mean, est.accel) if machine else Phase.BALANCE

        # Wheels: LQR on the moving set-point, then steering.
        self.x_ref += ref.velocity * self.dt
        length = 0.5 * (est.height[0] + est.height[1])
        total = balance_torque(self.gains.schedule.row(length), (est.x, est.xd, est.pitch, est.pitch_rate),
                               (self.x_ref, ref.velocity, 0.0, 0.0), limit=2 * self.wheel_limit)
        differential = yaw_torque(self.gains.yaw, est.yaw, est.yaw_rate, ref.yaw)
        wheels = split_wheel_torque(total, differential, self.wheel_limit)
        if machine is not None and machine.airborne:
            wheels, total = (0.0, 0.0), 0.0
        if machine is not None and phase in (Phase.RETRACT, Phase.FLIGHT, Phase.LANDING):
            self.x_ref = est.x  # odometry is meaningless in the air and on impact: hold no position

        # Hips.
        mode, value = machine.leg_target() if machine else ("vmc", nan)
        if self.height_ref is None or mode != "vmc":
            self.height_ref = length  # start (or resume after a jump) from where the legs are
        target = self.height_ref if ref.height is None else ref.height
        step = _clip(target - self.height_ref, self.height_rate_limit * self.dt)
        self.height_ref += step
        if mode == "vmc":
            F_y, T_x = virtual_forces(self.gains.legs, length, 0.5 * (est.height_rate[0] + est.height_rate[1]),
                                      self.height_ref,
                                      est.roll, est.roll_rate, height_rate_ref=step / self.dt)
            hips = hip_torques(self.params, est.height_slope, F_y, T_x, self.hip_limit)
        elif mode == "torque":
            hips = (value, value)
        else:  # leg-angle PD (jump phases) with the body's weight fed forward while on the ground
            on_ground = phase in (Phase.CROUCH, Phase.LANDING)
            left, right = (
                _clip(self.gains.alpha_kp * (value - a) - self.gains.alpha_kd * ad
                      + (0.25 * self.params.M * self.params.g * y1 if on_ground else 0.0),  # (P/2) y1 with P = M g / 2
                      self.hip_limit)
                for a, ad, y1 in zip(est.alpha, est.alpha_rate, est.height_slope, strict=True)
            )
            hips = (left, right)
        # Keep each leg symmetric: a PD on alpha_front - alpha_rear, equal and
        # opposite on the leg's two motors, saturated so the sum stays in range.
        angles, rates = est.hip_angles, est.hip_rates
        if angles is None or rates is None:
            raise ValueError("the biped controller needs each hip motor's encoder: Estimate.hip_angles, hip_rates")
        kp, kd, limit = self.gains.swing_kp, self.gains.swing_kd, self.hip_limit
        left, right = hips
        swing_left = -(kp * (angles[0] - angles[1]) + kd * (rates[0] - rates[1])) / 2
        swing_right = -(kp * (angles[2] - angles[3]) + kd * (rates[2] - rates[3])) / 2
        motors = (_clip(left + swing_left, limit), _clip(left - swing_left, limit),
                  _clip(right + swing_right, limit), _clip(right - swing_right, limit))
        # Positional, and the phase's string as its stored value: this runs every step.
        return Command(wheels, motors, (left, right), phase._value_, total)


def _clip(value: float, limit: float) -> float:
    """``value`` clipped to ``[-limit, limit]`` (a float; ``np.clip`` costs microseconds per scalar)."""
    return min(max(float(value), -limit), limit)
