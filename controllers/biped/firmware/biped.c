/*
 * The wheel-legged biped's balance and leg controllers as firmware carries them.
 *
 * One call per control period turns the robot's own sensors (IMU quaternion, gyro and
 * accelerometer; hip and wheel encoders) into the six motor torques:
 *
 *   - the state estimate: Z-Y-X Euler angles and rates from the IMU, each leg's angle,
 *     height above its axle and lever dy/dalpha from the five-bar, odometry from the
 *     wheels;
 *   - wheels: the balance LQR T = -K(l) (x - x_ref), K read from a gain table over leg
 *     length by linear interpolation, plus a yaw PD, split between the wheels with
 *     balance first;
 *   - hips: a virtual-model height and roll PD whose force and torque become leg forces
 *     (the body's weight fed forward) and hip torques through the five-bar's Jacobian,
 *     tau = (P / 2) dy/dalpha, plus a PD keeping each leg's two motors symmetric.
 *
 * Everything is in `real`, float unless the build says otherwise (-Dreal=double), in
 * fixed-size arrays; the estimator's and the set-points' memory is static.  The robot's
 * numbers (geometry, gains, limits) and the sensor and motor channels are globals the
 * host writes before the first step, as a flash of the parameter block.  It is the
 * Python controller of crossdyn.controllers.biped.controller without the jump, written for a
 * single-precision microcontroller.
 */
#include <tgmath.h> /* sin, cos, ... in the precision of their argument: sinf for float */

#define PI 3.14159265358979323846

#ifndef real
#define real float
#endif

#define TABLE 16    /* gain table entries over leg length */
#define SENSORS 22  /* quat 4, gyro 3, accel 3, hip pos 4, hip vel 4, wheel pos 2, wheel vel 2 */
#define MOTORS 6    /* left wheel, right wheel, hips: left front, left rear, right front, right rear */

/* The parameter block (written by the host before the first step). */
int sensor_channel[SENSORS];  /* index of each reading in the sensor array */
int motor_channel[MOTORS];    /* index of each motor in the command array */
real l1, l2, l3, wheel_radius;             /* five-bar lengths and wheel radius, m */
real alpha_low, alpha_high;                /* the leg angle's reachable range, rad */
real table_length[TABLE];                  /* leg lengths of the gain table, increasing, m */
real table_gain[TABLE][4];                 /* LQR gain on [x, xd, theta, thetad] at each length */
real yaw_kp, yaw_kd;                       /* N m/rad, N m s/rad */
real height_kp, height_kd, roll_kp, roll_kd;  /* N/m, N s/m, N m/rad, N m s/rad */
real swing_kp, swing_kd;                   /* N m/rad, N m s/rad */
real dt;                                   /* control period, s */
real hip_limit, wheel_limit;               /* motor torque limits, N m */
real height_rate_limit;                    /* m/s */
real weight, track;                        /* body weight M g (N) and track D (m) */
real ref_velocity, ref_yaw, ref_height;    /* the reference: m/s, rad, m ... */
real ref_start, ref_stop;                  /* ... speed and heading asked from ref_start to ref_stop, s (as a
                                              remote's stick would send them; zero outside) */

/* What the estimator and the set-points carry from step to step. */
static int started;
static real x0, yaw_prev, yaw_turns, x_ref, height_ref;

static real clip(real value, real limit)
{
    return value < -limit ? -limit : value > limit ? limit : value;
}

/* One leg from its two hip encoders: angle, rate, height, lever dy/dalpha, shank angle and its derivative. */
static void leg(real front, real rear, real front_rate, real rear_rate, real out[6])
{
    real alpha = (real)0.5 * (front + rear);
    alpha = alpha < alpha_low ? alpha_low : alpha > alpha_high ? alpha_high : alpha;
    real c = cos(alpha), s = sin(alpha);
    real a = l1 - l2 * c;              /* the knee's distance from the centre line */
    real root = sqrt(l3 * l3 - a * a); /* the axle's depth below the knee */
    out[0] = alpha;
    out[1] = (real)0.5 * (front_rate + rear_rate);
    out[2] = root - l2 * s;
    out[3] = -a * (l2 * s) / root - l2 * c;
    out[4] = asin(a / l3);
    out[5] = l2 * s / root;
}

/* The balance gain at leg length `length`: the table interpolated linearly, clamped to its ends. */
static void gain_at(real length, real k[4])
{
    int i = 0, j;
    real w;
    if (length <= table_length[0]) length = table_length[0];
    if (length >= table_length[TABLE - 1]) length = table_length[TABLE - 1];
    while (i < TABLE - 2 && length > table_length[i + 1]) ++i;
    w = (length - table_length[i]) / (table_length[i + 1] - table_length[i]);
    for (j = 0; j < 4; ++j) k[j] = table_gain[i][j] + w * (table_gain[i + 1][j] - table_gain[i][j]);
}

int biped_step(real t, const real *sensors, real *command)
{
    int asked = t >= ref_start && t < ref_stop;
    real velocity = asked ? ref_velocity : 0, heading = asked ? ref_yaw : 0;
    const int *ch = sensor_channel;
    real w = sensors[ch[0]], qx = sensors[ch[1]], qy = sensors[ch[2]], qz = sensors[ch[3]];
    real wx = sensors[ch[4]], wy = sensors[ch[5]], wz = sensors[ch[6]];
    real hip[4], hip_rate[4], left_leg[6], right_leg[6], k[4];
    int i;
    for (i = 0; i < SENSORS; ++i)
        if (!isfinite(sensors[ch[i]])) return 1; /* a sensor fault */
    for (i = 0; i < 4; ++i) {
        hip[i] = sensors[ch[10 + i]];
        hip_rate[i] = sensors[ch[14 + i]];
    }

    /* Attitude: Z-Y-X Euler angles and their rates. */
    real roll = atan2(2 * (w * qx + qy * qz), 1 - 2 * (qx * qx + qy * qy));
    real s = 2 * (w * qy - qz * qx);
    real pitch = asin(s > 1 ? 1 : s < -1 ? -1 : s);
    real yaw = atan2(2 * (w * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz));
    real sr = sin(roll), cr = cos(roll), cp = cos(pitch), tp = tan(pitch);
    real roll_rate = wx + sr * tp * wy + cr * tp * wz;
    real pitch_rate = cr * wy - sr * wz;
    real yaw_rate = (sr * wy + cr * wz) / cp;
    if (started) yaw_turns -= (real)(2 * PI) * round((yaw - yaw_prev) / (real)(2 * PI));
    yaw_prev = yaw;
    yaw += yaw_turns;

    /* Legs and odometry. */
    leg(hip[0], hip[1], hip_rate[0], hip_rate[1], left_leg);
    leg(hip[2], hip[3], hip_rate[2], hip_rate[3], right_leg);
    real x = wheel_radius * (real)0.5 * ((sensors[ch[18]] + pitch + left_leg[4])
                                         + (sensors[ch[19]] + pitch + right_leg[4]));
    real xd = wheel_radius * (real)0.5 * ((sensors[ch[20]] + pitch_rate + left_leg[5] * left_leg[1])
                                          + (sensors[ch[21]] + pitch_rate + right_leg[5] * right_leg[1]));
    real length = (real)0.5 * (left_leg[2] + right_leg[2]);
    real length_rate = (real)0.5 * (left_leg[3] * left_leg[1] + right_leg[3] * right_leg[1]);
    if (!started) {
        x0 = x;
        height_ref = length; /* start from where the legs are */
        started = 1;
    }
    x -= x0;

    /* Wheels: the LQR on the moving set-point, then the yaw PD, balance first. */
    x_ref += velocity * dt;
    gain_at(length, k);
    real total = clip(-(k[0] * (x - x_ref) + k[1] * (xd - velocity) + k[2] * pitch + k[3] * pitch_rate),
                      2 * wheel_limit);
    real error = fmod(heading - yaw + (real)PI, (real)(2 * PI));
    if (error < 0) error += (real)(2 * PI);
    error -= (real)PI;
    real differential = clip(-(yaw_kp * error + yaw_kd * (0 - yaw_rate)), 2 * wheel_limit - fabs(total));

    /* Hips: the virtual model's height and roll PD, through the five-bar's Jacobian. */
    real climb = clip(ref_height - height_ref, height_rate_limit * dt);
    height_ref += climb;
    real force = height_kp * (height_ref - length) + height_kd * (climb / dt - length_rate);
    real roll_torque = -roll_kp * roll - roll_kd * roll_rate;
    real common = (real)0.5 * (force + weight), lever = roll_torque / track;
    real left = clip((real)0.5 * (common + lever) * left_leg[3], hip_limit);
    real right = clip((real)0.5 * (common - lever) * right_leg[3], hip_limit);
    real swing_left = -(swing_kp * (hip[0] - hip[1]) + swing_kd * (hip_rate[0] - hip_rate[1])) / 2;
    real swing_right = -(swing_kp * (hip[2] - hip[3]) + swing_kd * (hip_rate[2] - hip_rate[3])) / 2;

    command[motor_channel[0]] = (real)0.5 * (total + differential);
    command[motor_channel[1]] = (real)0.5 * (total - differential);
    command[motor_channel[2]] = clip(left + swing_left, hip_limit);
    command[motor_channel[3]] = clip(left - swing_left, hip_limit);
    command[motor_channel[4]] = clip(right + swing_right, hip_limit);
    command[motor_channel[5]] = clip(right - swing_right, hip_limit);
    return 0;
}
