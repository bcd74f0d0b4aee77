/*
 * The controller wheel-leg teams flash, on the free-hip model (crossdyn.controllers.biped.free_hip in C).
 *
 * One call per control period turns the robot's sensors into its motor commands:
 *
 *   - the state [theta, theta_dot, x, x_dot, phi, phi_dot]: the body's pitch phi from the IMU
 *     (Z-Y-X), each leg's angle from the body and its length from the hip encoders (a rod leg's length
 *     from its slide), theta the legs' mean angle from the vertical, x the wheels' travel from their
 *     encoders since the first call;
 *   - [T, Tp] = -K(l) state, K(l) the fitted polynomials of the gain header at the legs' mean length l
 *     (Horner's rule, l clamped to the fitted range);
 *   - per leg the force along it F = kp (l_ref - l) - kd dl/dt + weight / 2 and its hip torque Tp / 2 less
 *     half a PD on the legs' split (theta_left - theta_right, which the one-leg model cannot see), turned
 *     into motor torques through the leg's Jacobian: a rod's slide takes F and its hinge the torque, a
 *     five-bar's motors J_l' F + J_theta' torque;
 *   - each wheel T / 2; every command clipped to its motor's limit.
 *
 * The gains come from the header GainSchedule.to_c writes (FREE_HIP_GAINS names it, default
 * "free_hip_gains.h"; its identifiers start with free_hip).  Everything is in `real`, float unless the
 * build says -Dreal=double, in fixed-size arrays; the odometry's origin is static.  The robot's numbers and
 * the channels are globals the host writes before the first step.
 */
#include <tgmath.h> /* sin, cos, ... in the precision of their argument: sinf for float */

#ifndef real
#define real float
#endif

#ifndef FREE_HIP_GAINS
#define FREE_HIP_GAINS "free_hip_gains.h"
#endif
#include FREE_HIP_GAINS

#if FREE_HIP_INPUTS != 2 || FREE_HIP_STATES != 6
#error "the free-hip controller needs a gain header of K (2, 6): [T, Tp] from [theta, theta_dot, x, x_dot, phi, phi_dot]"
#endif

#define SENSORS 23 /* quat 4, gyro 3, hip pos 4, hip vel 4, length pos 2, length vel 2, wheel pos 2, wheel vel 2:
                      rod legs read the first two of each hip group, five-bar legs no lengths */
#define MOTORS 8   /* hips 4 (rod: 2), lengths 2 (five-bar: none), wheels 2 */

/* The parameter block (written by the host before the first step). */
int five_bar;                 /* 1: five-bar legs (l1, l2, l3), 0: rod legs */
int sensor_channel[SENSORS];  /* index of each reading in the sensor array (unused ones: 0) */
int motor_channel[MOTORS];    /* index of each motor in the command array (unused ones: 0) */
real l1, l2, l3;              /* five-bar lengths, m */
real wheel_radius;            /* m */
real length_kp, length_kd;    /* N/m, N s/m */
real length_ref, weight;      /* the length held (m) and the body's weight fed forward (N) */
real split_kp, split_kd;      /* the legs' split PD: N m/rad, N m s/rad */
real wheel_limit, hip_limit, force_limit; /* N m, N m, N */

static int started;
static real x0;

static real clip(real value, real limit)
{
    return value < -limit ? -limit : value > limit ? limit : value;
}

/* A five-bar leg from its motors' angles and rates: out = {angle, angle rate, length, length rate, wheel
   carrier (front shank) angle, its rate, J_l front, J_l rear, J_theta front, J_theta rear}. */
static void five_bar_leg(real front, real rear, real front_rate, real rear_rate, real out[10])
{
    real kfx = l1 - l2 * cos(front), kfz = l2 * sin(front);  /* the knees, from the motors' midpoint */
    real krx = -l1 + l2 * cos(rear), krz = l2 * sin(rear);
    real dfx = l2 * sin(front), dfz = l2 * cos(front);       /* d knee / d alpha */
    real drx = -l2 * sin(rear), drz = l2 * cos(rear);
    real bx = kfx - krx, bz = kfz - krz, span = sqrt(bx * bx + bz * bz);
    real ux = bx / span, uz = bz / span, depth = sqrt(l3 * l3 - (real)0.25 * span * span);
    real ax = (real)0.5 * (kfx + krx) + depth * uz, az = (real)0.5 * (kfz + krz) - depth * ux;
    /* (A - K_f) . dA = (A - K_f) . dK_f d(front); (A - K_r) . dA = (A - K_r) . dK_r d(rear) */
    real e00 = ax - kfx, e01 = az - kfz, e10 = ax - krx, e11 = az - krz;
    real det = e00 * e11 - e01 * e10;
    real rf = e00 * dfx + e01 * dfz, rr = e10 * drx + e11 * drz;
    real jxf = e11 * rf / det, jzf = -e10 * rf / det, jxr = -e01 * rr / det, jzr = e00 * rr / det;
    real ll = ax * ax + az * az, length = sqrt(ll);
    real jlf = (ax * jxf + az * jzf) / length, jlr = (ax * jxr + az * jzr) / length;
    real jtf = (az * jxf - ax * jzf) / ll, jtr = (az * jxr - ax * jzr) / ll;
    real vx = ax - kfx, vz = az - kfz;
    real vxd = jxf * front_rate + jxr * rear_rate - dfx * front_rate;
    real vzd = jzf * front_rate + jzr * rear_rate - dfz * front_rate;
    out[0] = atan2(-ax, -az);
    out[1] = jtf * front_rate + jtr * rear_rate;
    out[2] = length;
    out[3] = jlf * front_rate + jlr * rear_rate;
    out[4] = atan2(-vx, -vz);
    out[5] = (vz * vxd - vx * vzd) / (vx * vx + vz * vz);
    out[6] = jlf;
    out[7] = jlr;
    out[8] = jtf;
    out[9] = jtr;
}

/* K(l): the header's polynomials by Horner's rule, l clamped to their range. */
static void gains_at(real length, real k[2][6])
{
    int d, i, j;
    if (length < FREE_HIP_LENGTH_MIN) length = FREE_HIP_LENGTH_MIN;
    if (length > FREE_HIP_LENGTH_MAX) length = FREE_HIP_LENGTH_MAX;
    for (i = 0; i < 2; ++i)
        for (j = 0; j < 6; ++j) {
            k[i][j] = free_hip_coeffs[0][i][j];
            for (d = 1; d <= FREE_HIP_DEGREE; ++d) k[i][j] = k[i][j] * length + free_hip_coeffs[d][i][j];
        }
}

int free_hip_step(real t, const real *sensors, real *command)
{
    const int *ch = sensor_channel;
    real leg[2][10], k[2][6], state[6];
    real T = 0, Tp = 0;
    int i, side;
    (void)t;
    for (i = 0; i < SENSORS; ++i)
        if (!isfinite(sensors[ch[i]])) return 1; /* a sensor fault */

    /* The body's pitch and its rate: Z-Y-X Euler angles from the IMU. */
    real w = sensors[ch[0]], qx = sensors[ch[1]], qy = sensors[ch[2]], qz = sensors[ch[3]];
    real wy = sensors[ch[5]], wz = sensors[ch[6]];
    real roll = atan2(2 * (w * qx + qy * qz), 1 - 2 * (qx * qx + qy * qy));
    real p = 2 * (w * qy - qz * qx);
    real phi = asin(p > 1 ? 1 : p < -1 ? -1 : p);
    real phi_rate = cos(roll) * wy - sin(roll) * wz;

    /* The legs: angle from the body, length, the wheel carrier's angle, and their rates. */
    for (side = 0; side < 2; ++side) {
        if (five_bar) {
            five_bar_leg(sensors[ch[7 + 2 * side]], sensors[ch[8 + 2 * side]], sensors[ch[11 + 2 * side]],
                         sensors[ch[12 + 2 * side]], leg[side]);
        } else {
            leg[side][0] = leg[side][4] = sensors[ch[7 + side]];
            leg[side][1] = leg[side][5] = sensors[ch[11 + side]];
            leg[side][2] = sensors[ch[15 + side]];
            leg[side][3] = sensors[ch[17 + side]];
        }
    }
    real x = wheel_radius * (real)0.5 * ((sensors[ch[19]] + phi + leg[0][4]) + (sensors[ch[20]] + phi + leg[1][4]));
    real xd = wheel_radius * (real)0.5 * ((sensors[ch[21]] + phi_rate + leg[0][5])
                                          + (sensors[ch[22]] + phi_rate + leg[1][5]));
    if (!started) {
        x0 = x;
        started = 1;
    }
    state[0] = phi + (real)0.5 * (leg[0][0] + leg[1][0]);
    state[1] = phi_rate + (real)0.5 * (leg[0][1] + leg[1][1]);
    state[2] = x - x0;
    state[3] = xd;
    state[4] = phi;
    state[5] = phi_rate;

    /* The LQR on the scheduled gains: both wheels' torque and both legs' hip torque. */
    gains_at((real)0.5 * (leg[0][2] + leg[1][2]), k);
    for (i = 0; i < 6; ++i) {
        T -= k[0][i] * state[i];
        Tp -= k[1][i] * state[i];
    }

    /* Each leg: the length loop with the weight fed forward and its share of Tp less the split PD, through the
       leg's Jacobian. */
    real split = split_kp * (leg[0][0] - leg[1][0]) + split_kd * (leg[0][1] - leg[1][1]);
    for (side = 0; side < 2; ++side) {
        real force = length_kp * (length_ref - leg[side][2]) - length_kd * leg[side][3] + (real)0.5 * weight;
        real torque = (real)0.5 * Tp - (side == 0 ? (real)0.5 : (real)-0.5) * split;
        if (five_bar) {
            command[motor_channel[2 * side]] = clip(leg[side][6] * force + leg[side][8] * torque, hip_limit);
            command[motor_channel[2 * side + 1]] = clip(leg[side][7] * force + leg[side][9] * torque, hip_limit);
        } else {
            command[motor_channel[side]] = clip(torque, hip_limit);
            command[motor_channel[4 + side]] = clip(force, force_limit);
        }
        command[motor_channel[6 + side]] = clip((real)0.5 * T, wheel_limit);
    }
    return 0;
}
