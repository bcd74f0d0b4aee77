"""Today's (before the plain-float rewrite) estimator and controller, kept verbatim as the
reference the fast per-step path is checked against (tests/test_closed_loop_fast.py).

NumPy arrays throughout, as first written: readable, and about 10x slower per step
than the physics.  Nothing outside the tests imports this.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from crossdyn.analytic.biped import five_bar
from crossdyn.analytic.biped.wheeled_pendulum import PendulumParams
from crossdyn.analytic.rotation import euler_rates, euler_zyx
from crossdyn.controllers.biped import BipedGains, Command, Reference
from crossdyn.controllers.estimation import LegGeometry
from crossdyn.controllers.jump import JumpPlan, JumpStateMachine, Phase
from crossdyn.controllers.steering import split_wheel_torque, yaw_torque
from crossdyn.controllers.virtual_model import virtual_forces


def _schedule(schedule, length: float) -> np.ndarray:
    """``GainSchedule.__call__`` as it was: NumPy Horner on the (1, 4) gain."""
    l = min(max(float(length), schedule.lengths[0]), schedule.lengths[-1])
    gain = schedule.coeffs[0].copy()
    for c in schedule.coeffs[1:]:
        gain = gain * l + c
    return gain


def _leg_forces(p, F_y, T_x):
    common = 0.5 * (np.asarray(F_y, dtype=float) + p.M * p.g)
    roll = np.asarray(T_x, dtype=float) / p.D
    return common + roll, common - roll


def hip_torques(params, slopes, F_y, T_x, limit):
    P_L, P_R = _leg_forces(params, F_y, T_x)
    tau_L, tau_R = 0.5 * float(P_L) * float(slopes[0]), 0.5 * float(P_R) * float(slopes[1])  # eq. 2.30
    return min(max(tau_L, -limit), limit), min(max(tau_R, -limit), limit)


@dataclass(frozen=True)
class Estimate:
    """The controller's view of the robot at one instant (SI units, rad).

    ``alpha``, ``alpha_rate``, ``height`` are ``(left, right)`` arrays; ``height``
    is each leg's hip-line height above its axle, eq. 3.2.
    """

    x: float
    xd: float
    pitch: float
    pitch_rate: float
    roll: float
    roll_rate: float
    yaw: float
    yaw_rate: float
    alpha: np.ndarray
    alpha_rate: np.ndarray
    height: np.ndarray
    height_rate: np.ndarray
    height_slope: np.ndarray  # (left, right) dy/dalpha, m/rad: the five-bar's lever (eq. 2.29)
    accel: float  # |specific force| from the accelerometer, m/s^2 (about 0 in free fall)
    hip_angles: np.ndarray = None  # (4,) per motor: left front, left rear, right front, right rear, rad
    hip_rates: np.ndarray = None  # (4,), rad/s

    @property
    def balance_state(self) -> np.ndarray:
        """``[x, xd, theta, thetad]`` of the wheeled pendulum."""
        return np.array([self.x, self.xd, self.pitch, self.pitch_rate])



class ReferenceEstimator:
    """Turns one sample of sensor readings into an :class:`Estimate`.

    Odometry starts at ``x = 0`` on the first update; yaw is unwrapped so a turn
    through +-180 deg stays continuous.
    """

    def __init__(self, geometry: LegGeometry):
        # Validate the leg over its whole reachable range once: every update clips
        # alpha into that range, so the per-step geometry needs no further checks.
        five_bar.check_alpha(np.linspace(*five_bar.REACHABLE, 721), geometry.l1, geometry.l2, geometry.l3)
        self.geometry = geometry
        self._x0: float | None = None
        self._yaw_prev: float | None = None
        self._yaw_turns = 0.0

    def update(self, quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel) -> Estimate:
        """One estimate.

        Args:
          quat: IMU orientation ``(w, x, y, z)``; gyro: body angular velocity, rad/s, (3,);
          accel: accelerometer, m/s^2, (3,).
          hip_pos, hip_vel: hip encoders ``(left front, left rear, right front, right rear)``, rad, rad/s.
          wheel_pos, wheel_vel: wheel encoders ``(left, right)``, rad, rad/s (relative to the shank).

        Raises:
          ValueError: a non-finite reading (a sensor fault or a diverged simulation).
        """
        readings = [np.asarray(v, dtype=float) for v in (quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel)]
        if not np.isfinite(np.concatenate(readings)).all():
            raise ValueError("non-finite sensor reading: the state cannot be estimated")
        quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel = readings
        g = self.geometry
        roll, pitch, yaw = (float(a) for a in euler_zyx(quat))
        roll_rate, pitch_rate, yaw_rate = (float(a) for a in euler_rates(roll, pitch, gyro))

        if self._yaw_prev is not None:
            jump = yaw - self._yaw_prev
            self._yaw_turns -= 2 * np.pi * np.round(jump / (2 * np.pi))
        self._yaw_prev = yaw

        alpha = 0.5 * (hip_pos[0::2] + hip_pos[1::2])  # (left, right): mean of front and rear motor
        alpha = np.clip(alpha, *five_bar.REACHABLE)  # a transient overshoot must not stop the estimate
        alpha_rate = 0.5 * (hip_vel[0::2] + hip_vel[1::2])
        y, y1, _ = five_bar.height_derivatives(alpha, g.l1, g.l2, g.l3, validate=False)  # checked in __init__
        a = g.l1 - g.l2 * np.cos(alpha)
        phi, dphi = np.arcsin(a / g.l3), g.l2 * np.sin(alpha) / np.sqrt(g.l3**2 - a**2)
        # Wheel rotation in the world = encoder + shank pitch (body pitch + phi); rolling
        # without slip, the axle moves r times that.
        wheel_angle = wheel_pos + pitch + phi
        wheel_rate = wheel_vel + pitch_rate + dphi * alpha_rate
        x = g.r * 0.5 * float(wheel_angle[0] + wheel_angle[1])
        if self._x0 is None:
            self._x0 = x
        return Estimate(
            x=x - self._x0,
            xd=g.r * 0.5 * float(wheel_rate[0] + wheel_rate[1]),
            pitch=pitch,
            pitch_rate=pitch_rate,
            roll=roll,
            roll_rate=roll_rate,
            yaw=yaw + self._yaw_turns,
            yaw_rate=yaw_rate,
            alpha=alpha,
            alpha_rate=alpha_rate,
            height=y,
            height_rate=y1 * alpha_rate,
            height_slope=y1,
            accel=float(np.linalg.norm(accel)),
            hip_angles=hip_pos,
            hip_rates=hip_vel,
        )


def balance_torque(K: np.ndarray, state, reference=None, limit: float | None = None) -> float:
    """Total wheel torque ``T = -K (x - x_ref)``, saturated to ``+-limit`` (N m).

    Args:
      K: gain ``(1, 4)``.
      state: ``[x, xd, theta, thetad]``.
      reference: the same, default zero (stand still).
      limit: total torque limit (both wheels), or None.
    """
    state = np.asarray(state, dtype=float)
    if not np.isfinite(state).all():
        raise ValueError(f"balance state must be finite, got {state}")
    error = state if reference is None else state - np.asarray(reference, dtype=float)
    torque = -float(np.asarray(K, dtype=float).reshape(-1) @ error)
    return torque if limit is None else min(max(torque, -limit), limit)


@dataclass
class ReferenceController:
    """Balance + steering + legs (+ an optional jump); call once per control step.

    Attributes:
      params: pendulum parameters (body weight for the leg feed-forward).
      geometry: leg geometry.
      gains: :class:`BipedGains`.
      dt: control period, s (integrates the position reference).
      hip_limit, wheel_limit: motor torque limits, N m.
      jump: a jump plan, or None.
      height_rate_limit: the leg-height set-point moves towards ``Reference.height``
        at most this fast, m/s (a step in the reference would otherwise ask the
        virtual spring for a force that throws the robot off the ground).
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
        alpha_mean = 0.5 * float(est.alpha[0] + est.alpha[1])
        phase = self.machine.update(t, alpha_mean, est.accel) if self.machine else Phase.BALANCE

        # Wheels: LQR on the moving set-point, then steering.
        self.x_ref += ref.velocity * self.dt
        length = 0.5 * float(est.height[0] + est.height[1])
        total = balance_torque(_schedule(self.gains.schedule, length), est.balance_state, (self.x_ref, ref.velocity, 0.0, 0.0),
                               limit=2 * self.wheel_limit)
        differential = yaw_torque(self.gains.yaw, est.yaw, est.yaw_rate, ref.yaw)
        wheels = split_wheel_torque(total, differential, self.wheel_limit)
        if self.machine is not None and self.machine.airborne:
            wheels, total = (0.0, 0.0), 0.0
        if self.machine is not None and phase in (Phase.RETRACT, Phase.FLIGHT, Phase.LANDING):
            self.x_ref = est.x  # odometry is meaningless in the air and on impact: hold no position

        # Hips.
        mode, value = self.machine.leg_target() if self.machine else ("vmc", np.nan)
        if self.height_ref is None or mode != "vmc":
            self.height_ref = length  # start (or resume after a jump) from where the legs are
        target = self.height_ref if ref.height is None else ref.height
        step = _clip(target - self.height_ref, self.height_rate_limit * self.dt)
        self.height_ref += step
        if mode == "vmc":
            F_y, T_x = virtual_forces(self.gains.legs, length, 0.5 * float(est.height_rate[0] + est.height_rate[1]),
                                      self.height_ref,
                                      est.roll, est.roll_rate, height_rate_ref=step / self.dt)
            hips = hip_torques(self.params, est.height_slope, F_y, T_x, self.hip_limit)
        elif mode == "torque":
            hips = (value, value)
        else:  # leg-angle PD (jump phases) with the body's weight fed forward while on the ground
            on_ground = phase in (Phase.CROUCH, Phase.LANDING)
            hips = tuple(
                _clip(self.gains.alpha_kp * (value - a) - self.gains.alpha_kd * ad
                      + (0.25 * self.params.M * self.params.g * y1 if on_ground else 0.0),  # eq. 2.30, P = M g / 2
                      self.hip_limit)
                for a, ad, y1 in zip(est.alpha, est.alpha_rate, est.height_slope)
            )
        # Keep each leg symmetric: a PD on alpha_front - alpha_rear, equal and
        # opposite on the leg's two motors, saturated so the sum stays in range.
        motors = []
        for leg, common in enumerate(hips):
            front, rear = 2 * leg, 2 * leg + 1
            swing = -(self.gains.swing_kp * (est.hip_angles[front] - est.hip_angles[rear])
                      + self.gains.swing_kd * (est.hip_rates[front] - est.hip_rates[rear])) / 2
            motors += [_clip(common + swing, self.hip_limit), _clip(common - swing, self.hip_limit)]
        return Command(wheels=wheels, hips=tuple(motors), legs=tuple(hips), phase=phase.value, wheel_total=total)


def _clip(value: float, limit: float) -> float:
    """``value`` clipped to ``[-limit, limit]`` (a float; ``np.clip`` costs microseconds per scalar)."""
    return min(max(float(value), -limit), limit)
