"""The biped's estimator and controller for one control step, compiled with Numba.

:func:`step` is :meth:`Estimator.update <crossdyn.controllers.biped.estimation.Estimator.update>`
followed by :meth:`BipedController.__call__ <crossdyn.controllers.biped.controller.BipedController.__call__>`
written once more for Numba: the same operations in the same order, so its torques and log equal the
readable classes' bit for bit (tests/test_compiled.py).  The readable classes stay the reference and run
every path this one does not (hardware hooks, ground truth, subclasses); compiled, the step costs a
fraction of a MuJoCo step instead of more than it (benchmarks/control_step_speed.py).  Everything crosses
as flat float64 arrays laid out by the constants below (:func:`pack`, :func:`unpack`).
"""

from __future__ import annotations

from math import asin, atan2, cos, isfinite, isnan, nan, pi, sin, sqrt, tan

import numpy as np
from numba import njit

from ...analytic.biped import five_bar
from .controller import BipedController
from .estimation import Estimate, LegGeometry
from .jump import Phase

__all__ = ["step", "estimate", "as_estimate", "pack", "pack_estimator", "unpack", "PHASES", "LOG_WIDTH", "SENSORS",
           "ESTIMATE"]

# Jump phases by number, in the order of controllers.jump.Phase.
PHASES = tuple(Phase)
BALANCE, CROUCH, THRUST, RETRACT, FLIGHT, LANDING = range(6)

# Sensor readings, in the estimator's argument order: quat (4), gyro (3), accel (3), hip_pos (4),
# hip_vel (4), wheel_pos (2), wheel_vel (2) -- indices into sensordata.
SENSORS = 22

# params: the controller's constants.
(P_L1, P_L2, P_L3, P_R, P_LOW, P_HIGH, P_LEN_LOW, P_LEN_HIGH, P_YAW_KP, P_YAW_KD, P_KP_H, P_KD_H, P_KP_ROLL,
 P_KD_ROLL, P_ALPHA_KP, P_ALPHA_KD, P_SWING_KP, P_SWING_KD, P_DT, P_HIP_LIMIT, P_WHEEL_LIMIT, P_RATE_LIMIT,
 P_WEIGHT, P_D, P_FEED, P_JUMP, P_START, P_ALPHA_CROUCH, P_ALPHA_TAKEOFF, P_ALPHA_FLIGHT, P_ALPHA_LAND,
 P_CROUCH_TIME, P_THRUST, P_FREEFALL, P_TOUCHDOWN, P_RETRACT_TIMEOUT, P_MIN_FLIGHT, P_LANDING_TIME) = range(38)
PARAMS = 38

# state: what the estimator and controller carry from step to step (nan: not set yet).
S_X0, S_YAW_PREV, S_YAW_TURNS, S_X_REF, S_HEIGHT_REF, S_PHASE, S_SINCE, S_DONE = range(8)
STATE = 8

# One log row: what closed_loop._LOG records, then the phase's number.
LOG_WIDTH = 16


@njit(cache=True)
def _clip(value, limit):
    return min(max(value, -limit), limit)


@njit(cache=True)
def _leg(front, rear, front_rate, rear_rate, p):
    """Estimator._leg: ``(alpha, alpha_rate, y, y1, phi, dphi)`` of one leg."""
    l1, l2, l3 = p[P_L1], p[P_L2], p[P_L3]
    low, high = p[P_LOW], p[P_HIGH]
    alpha = 0.5 * (front + rear)
    alpha = low if alpha < low else high if alpha > high else alpha
    c, s = cos(alpha), sin(alpha)
    a = l1 - l2 * c
    root = sqrt(l3 * l3 - a * a)
    return (alpha, 0.5 * (front_rate + rear_rate), root - l2 * s, -a * (l2 * s) / root - l2 * c,
            asin(a / l3), l2 * s / root)


@njit(cache=True)
def _jump_update(t, alpha_mean, accel, p, state):
    """JumpStateMachine.update on ``state``; returns the phase for this step."""
    phase, dwell = int(state[S_PHASE]), t - state[S_SINCE]
    new = -1
    if phase == BALANCE and state[S_DONE] == 0.0 and t >= p[P_START]:
        new = CROUCH
    elif phase == CROUCH and dwell >= p[P_CROUCH_TIME]:
        new = THRUST
    elif phase == THRUST and alpha_mean >= p[P_ALPHA_TAKEOFF]:
        new = RETRACT
    elif phase == RETRACT:
        if accel < p[P_FREEFALL]:
            new = FLIGHT
        elif dwell >= p[P_RETRACT_TIMEOUT]:
            new = LANDING
    elif phase == FLIGHT and dwell >= p[P_MIN_FLIGHT] and accel > p[P_TOUCHDOWN]:
        new = LANDING
    elif phase == LANDING and dwell >= p[P_LANDING_TIME]:
        state[S_DONE] = 1.0
        new = BALANCE
    if new >= 0:
        state[S_PHASE], state[S_SINCE] = new, t
        return new
    return phase


# An estimate: the fields of controllers.estimation.Estimate, (left, right) pairs and the hip
# encoders flattened, in that order.
(E_X, E_XD, E_PITCH, E_PITCH_RATE, E_ROLL, E_ROLL_RATE, E_YAW, E_YAW_RATE, E_ALPHA_L, E_ALPHA_R, E_ALPHA_RATE_L,
 E_ALPHA_RATE_R, E_HEIGHT_L, E_HEIGHT_R, E_HEIGHT_RATE_L, E_HEIGHT_RATE_R, E_SLOPE_L, E_SLOPE_R, E_ACCEL,
 E_HIP_ANGLES, E_HIP_RATES) = (*range(19), 19, 23)
ESTIMATE = 27


@njit(cache=True)
def estimate(sensordata, index, p, state, e):
    """Estimator.update: the sensors at ``index[:SENSORS]`` of ``sensordata`` -> the estimate ``e`` (written).

    Returns False when a reading is not finite (the estimator's ValueError; nothing is written).
    """
    for k in range(SENSORS):
        if not isfinite(sensordata[index[k]]):
            return False
    w, qx, qy, qz = sensordata[index[0]], sensordata[index[1]], sensordata[index[2]], sensordata[index[3]]
    wx, wy, wz = sensordata[index[4]], sensordata[index[5]], sensordata[index[6]]
    ax, ay, az = sensordata[index[7]], sensordata[index[8]], sensordata[index[9]]
    hip = (sensordata[index[10]], sensordata[index[11]], sensordata[index[12]], sensordata[index[13]])
    hip_rate = (sensordata[index[14]], sensordata[index[15]], sensordata[index[16]], sensordata[index[17]])

    roll = atan2(2 * (w * qx + qy * qz), 1 - 2 * (qx * qx + qy * qy))
    s = 2 * (w * qy - qz * qx)
    pitch = asin(1.0 if s > 1.0 else -1.0 if s < -1.0 else s)
    yaw = atan2(2 * (w * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz))
    sr, cr, cp, tp = sin(roll), cos(roll), cos(pitch), tan(pitch)
    roll_rate = wx + sr * tp * wy + cr * tp * wz
    pitch_rate = cr * wy - sr * wz
    yaw_rate = (sr * wy + cr * wz) / cp
    if not isnan(state[S_YAW_PREV]):
        state[S_YAW_TURNS] -= 2 * pi * round((yaw - state[S_YAW_PREV]) / (2 * pi))
    state[S_YAW_PREV] = yaw
    al, adl, yl, y1l, phil, dphil = _leg(hip[0], hip[1], hip_rate[0], hip_rate[1], p)
    ar, adr, yr, y1r, phir, dphir = _leg(hip[2], hip[3], hip_rate[2], hip_rate[3], p)
    x = p[P_R] * 0.5 * ((sensordata[index[18]] + pitch + phil) + (sensordata[index[19]] + pitch + phir))
    if isnan(state[S_X0]):
        state[S_X0] = x
    e[E_X] = x - state[S_X0]
    e[E_XD] = p[P_R] * 0.5 * ((sensordata[index[20]] + pitch_rate + dphil * adl)
                              + (sensordata[index[21]] + pitch_rate + dphir * adr))
    e[E_PITCH], e[E_PITCH_RATE], e[E_ROLL], e[E_ROLL_RATE] = pitch, pitch_rate, roll, roll_rate
    e[E_YAW], e[E_YAW_RATE] = yaw + state[S_YAW_TURNS], yaw_rate
    e[E_ALPHA_L], e[E_ALPHA_R], e[E_ALPHA_RATE_L], e[E_ALPHA_RATE_R] = al, ar, adl, adr
    e[E_HEIGHT_L], e[E_HEIGHT_R], e[E_HEIGHT_RATE_L], e[E_HEIGHT_RATE_R] = yl, yr, y1l * adl, y1r * adr
    e[E_SLOPE_L], e[E_SLOPE_R] = y1l, y1r
    e[E_ACCEL] = sqrt(ax * ax + ay * ay + az * az)
    for k in range(4):
        e[E_HIP_ANGLES + k], e[E_HIP_RATES + k] = hip[k], hip_rate[k]
    return True


@njit(cache=True)
def step(t, ref_velocity, ref_yaw, ref_height, sensordata, index, ctrl, p, powers, state, log, row):
    """One control step: :func:`estimate`, then the controller's torques into ``ctrl`` and one row of ``log``.

    Args:
      t: time, s.  ref_velocity (m/s), ref_yaw (rad), ref_height (m, nan: hold the stance).
      sensordata: MuJoCo's sensor array.
      index: int64, ``SENSORS`` sensor indices then the actuators (left wheel, right wheel,
        the four hips in ``HIPS`` order).
      ctrl: MuJoCo's control array (written).
      p: ``PARAMS`` constants; powers: the gain schedule's coefficients, ``(degree + 1, 4)``.
      state: ``STATE`` values carried between steps (updated).
      log: ``(N, LOG_WIDTH)`` table; row ``row`` is written.

    Returns:
      False when a sensor reading is not finite (nothing is written), else True.
    """
    # One function on purpose: Numba reference-counts every array handed to a helper (a measurable cost).
    e = np.empty(ESTIMATE)
    if not estimate(sensordata, index, p, state, e):
        return False
    x, xd, pitch, pitch_rate = e[E_X], e[E_XD], e[E_PITCH], e[E_PITCH_RATE]
    roll, roll_rate, yaw, yaw_rate = e[E_ROLL], e[E_ROLL_RATE], e[E_YAW], e[E_YAW_RATE]
    al, ar, adl, adr = e[E_ALPHA_L], e[E_ALPHA_R], e[E_ALPHA_RATE_L], e[E_ALPHA_RATE_R]
    yl, yr, hrl, hrr = e[E_HEIGHT_L], e[E_HEIGHT_R], e[E_HEIGHT_RATE_L], e[E_HEIGHT_RATE_R]
    y1l, y1r, accel = e[E_SLOPE_L], e[E_SLOPE_R], e[E_ACCEL]

    # BipedController.__call__
    jump = p[P_JUMP] != 0.0
    phase = _jump_update(t, 0.5 * (al + ar), accel, p, state) if jump else BALANCE
    dt, wheel_limit, hip_limit = p[P_DT], p[P_WHEEL_LIMIT], p[P_HIP_LIMIT]
    state[S_X_REF] += ref_velocity * dt
    length = 0.5 * (yl + yr)
    # GainSchedule.row: Horner's rule, highest power first
    held = min(max(length, p[P_LEN_LOW]), p[P_LEN_HIGH])  # clamped to the table
    k0, k1, k2, k3 = powers[0, 0], powers[0, 1], powers[0, 2], powers[0, 3]
    for j in range(1, powers.shape[0]):
        k0, k1, k2, k3 = (k0 * held + powers[j, 0], k1 * held + powers[j, 1], k2 * held + powers[j, 2],
                          k3 * held + powers[j, 3])
    # balance_torque
    e0, e1, e2, e3 = x - state[S_X_REF], xd - ref_velocity, pitch - 0.0, pitch_rate - 0.0
    total = _clip(-(k0 * e0 + k1 * e1 + k2 * e2 + k3 * e3), 2 * wheel_limit)
    # yaw_torque, split_wheel_torque
    error = (ref_yaw - yaw + pi) % (2 * pi) - pi
    differential = -(p[P_YAW_KP] * error + p[P_YAW_KD] * (0.0 - yaw_rate))
    split_total = _clip(total, 2 * wheel_limit)
    room = 2 * wheel_limit - abs(split_total)
    differential = _clip(differential, room)
    wheel_l, wheel_r = 0.5 * (split_total + differential), 0.5 * (split_total - differential)
    if jump and phase in (RETRACT, FLIGHT):
        wheel_l, wheel_r, total = 0.0, 0.0, 0.0
    if jump and phase in (RETRACT, FLIGHT, LANDING):
        state[S_X_REF] = x

    # Hips: the jump's leg target, or the virtual model
    vmc = phase in (BALANCE, LANDING)
    if isnan(state[S_HEIGHT_REF]) or not vmc:
        state[S_HEIGHT_REF] = length
    target = state[S_HEIGHT_REF] if isnan(ref_height) else ref_height
    climb = _clip(target - state[S_HEIGHT_REF], p[P_RATE_LIMIT] * dt)
    state[S_HEIGHT_REF] += climb
    if vmc:
        F_y = p[P_KP_H] * (state[S_HEIGHT_REF] - length) + p[P_KD_H] * (climb / dt - 0.5 * (hrl + hrr))
        T_x = -p[P_KP_ROLL] * roll - p[P_KD_ROLL] * roll_rate
        common = 0.5 * (F_y + p[P_WEIGHT])
        lever = T_x / p[P_D]
        left = _clip(0.5 * (common + lever) * y1l, hip_limit)
        right = _clip(0.5 * (common - lever) * y1r, hip_limit)
    elif phase == THRUST:
        left = right = p[P_THRUST]
    else:
        value = p[P_ALPHA_CROUCH] if phase == CROUCH else p[P_ALPHA_FLIGHT] if phase == RETRACT else p[P_ALPHA_LAND]
        on_ground = phase == CROUCH
        feed_l = p[P_FEED] * y1l if on_ground else 0.0
        feed_r = p[P_FEED] * y1r if on_ground else 0.0
        left = _clip(p[P_ALPHA_KP] * (value - al) - p[P_ALPHA_KD] * adl + feed_l, hip_limit)
        right = _clip(p[P_ALPHA_KP] * (value - ar) - p[P_ALPHA_KD] * adr + feed_r, hip_limit)
    kp, kd = p[P_SWING_KP], p[P_SWING_KD]
    angle, rate = E_HIP_ANGLES, E_HIP_RATES
    swing_left = -(kp * (e[angle] - e[angle + 1]) + kd * (e[rate] - e[rate + 1])) / 2
    swing_right = -(kp * (e[angle + 2] - e[angle + 3]) + kd * (e[rate + 2] - e[rate + 3])) / 2

    ctrl[index[SENSORS]], ctrl[index[SENSORS + 1]] = wheel_l, wheel_r
    ctrl[index[SENSORS + 2]] = _clip(left + swing_left, hip_limit)
    ctrl[index[SENSORS + 3]] = _clip(left - swing_left, hip_limit)
    ctrl[index[SENSORS + 4]] = _clip(right + swing_right, hip_limit)
    ctrl[index[SENSORS + 5]] = _clip(right - swing_right, hip_limit)
    out = log[row]
    out[0], out[1], out[2], out[3], out[4], out[5], out[6] = x, xd, pitch, yl, yr, al, ar
    out[7], out[8], out[9], out[10], out[11] = wheel_l, wheel_r, left, right, total
    out[12], out[13], out[14], out[15] = ref_velocity, ref_yaw, ref_height, phase
    return True


def pack_estimator(geometry: LegGeometry) -> tuple[np.ndarray, np.ndarray]:
    """``(params, state)`` for :func:`estimate` alone: a new estimator for ``geometry``."""
    p = np.zeros(PARAMS)
    p[[P_L1, P_L2, P_L3, P_R]] = geometry.l1, geometry.l2, geometry.l3, geometry.r
    p[[P_LOW, P_HIGH]] = five_bar.REACHABLE
    state = np.full(STATE, nan)
    state[S_YAW_TURNS] = 0.0
    return p, state


def pack(controller: BipedController, geometry: LegGeometry) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(params, powers, state)`` for :func:`step` from a controller (its current state too) and a
    new estimator for ``geometry``."""
    g, machine, pend = controller.gains, controller.machine, controller.params
    schedule = g.schedule
    p, state = pack_estimator(geometry)
    p[[P_LEN_LOW, P_LEN_HIGH]] = schedule.lengths[0], schedule.lengths[-1]
    p[[P_YAW_KP, P_YAW_KD]] = g.yaw.kp, g.yaw.kd
    p[[P_KP_H, P_KD_H, P_KP_ROLL, P_KD_ROLL]] = g.legs.kp_height, g.legs.kd_height, g.legs.kp_roll, g.legs.kd_roll
    p[[P_ALPHA_KP, P_ALPHA_KD, P_SWING_KP, P_SWING_KD]] = g.alpha_kp, g.alpha_kd, g.swing_kp, g.swing_kd
    p[[P_DT, P_HIP_LIMIT, P_WHEEL_LIMIT, P_RATE_LIMIT]] = (controller.dt, controller.hip_limit, controller.wheel_limit,
                                                           controller.height_rate_limit)
    p[P_WEIGHT] = pend.M * pend.g  # analytic.biped.wheeled_pendulum.leg_forces
    p[P_D] = pend.D
    p[P_FEED] = 0.25 * pend.M * pend.g  # weight feed-forward per motor: static hip torque, P = M g / 2
    state[S_X_REF] = controller.x_ref
    if controller.height_ref is not None:
        state[S_HEIGHT_REF] = controller.height_ref
    state[[S_PHASE, S_SINCE, S_DONE]] = BALANCE, 0.0, 0.0
    if machine is not None:
        plan = machine.plan
        p[P_JUMP] = 1.0
        p[[P_START, P_ALPHA_CROUCH, P_ALPHA_TAKEOFF, P_ALPHA_FLIGHT, P_ALPHA_LAND, P_CROUCH_TIME, P_THRUST,
           P_FREEFALL, P_TOUCHDOWN, P_RETRACT_TIMEOUT, P_MIN_FLIGHT, P_LANDING_TIME]] = (
            plan.start, plan.alpha_crouch, plan.alpha_takeoff, plan.alpha_flight, plan.alpha_land, plan.crouch_time,
            plan.thrust_torque, plan.freefall_accel, plan.touchdown_accel, plan.retract_timeout, plan.min_flight,
            plan.landing_time)
        state[[S_PHASE, S_SINCE, S_DONE]] = PHASES.index(machine.phase), machine._since, float(machine._done)
    powers = np.ascontiguousarray(schedule.coeffs.reshape(schedule.coeffs.shape[0], -1), dtype=float)
    if powers.shape[1] != 4:
        raise ValueError(f"the compiled step needs a 1 x 4 balance gain, got {schedule.coeffs.shape[1:]}")
    return p, powers, state


def as_estimate(values: list) -> Estimate:
    """An :class:`~crossdyn.controllers.biped.estimation.Estimate` from :func:`estimate`'s array as a list."""
    v = values
    return Estimate(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], (v[8], v[9]), (v[10], v[11]), (v[12], v[13]),
                    (v[14], v[15]), (v[16], v[17]), v[18], (v[19], v[20], v[21], v[22]), (v[23], v[24], v[25], v[26]))


def unpack(controller: BipedController, state: np.ndarray, times: np.ndarray, phases: np.ndarray) -> None:
    """Write :func:`step`'s final ``state`` back into ``controller``, and its jump machine's
    transitions from the per-step ``phases`` (numbers) at ``times``."""
    controller.x_ref = float(state[S_X_REF])
    controller.height_ref = None if isnan(state[S_HEIGHT_REF]) else float(state[S_HEIGHT_REF])
    machine = controller.machine
    if machine is None:
        return
    previous = PHASES.index(machine.phase)
    for t, phase in zip(times.tolist(), phases.astype(int).tolist(), strict=True):
        if phase != previous:
            machine.transitions.append((float(t), PHASES[phase].value))
            previous = phase
    machine.phase, machine._since, machine._done = PHASES[int(state[S_PHASE])], float(state[S_SINCE]), \
        bool(state[S_DONE])
