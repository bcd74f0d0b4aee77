"""The biped: is the MJCF the robot?  Logs of its own closed loop, made in simulation.

The "robot" is the shipped biped with its left front shank 30 % heavier, viscous
damping and Coulomb friction on both wheel axles (the MJCF has neither) and its
commands reaching the motors 0.5 ms late (:func:`robot_spec`).  The biped's own
controller (designed on the MJCF) balances it while it drives back and forth, turns
and changes height, and :func:`record_closed_loop` logs what a real biped logs: the
commands the controller sent, the hip and wheel encoders (angle and speed) and the
IMU (orientation and gyro), all with noise, at the 1 kHz control rate.  No log holds
the passive knees, nor where the base is: each replayed window starts from the
logged readings, completed from the model's own constraints (the five-bar loops
closed, the wheels on the floor and rolling; :mod:`crossdyn.experiments.core.identify.fit`).

``crossdyn check model`` on such a log (tests/test_identify_biped.py): the robot's
own model replays it within 1.6-1.75 x the noise (seeds 0-2, 1 s logs), the MJCF as
shipped at 20-40 x, naming a wheel's encoder.

Why 0.5 ms and short windows: the biped's leg loop loses its balance with a command
delay of 0.75 ms or more (measured with this scenario), and its balance is unstable
open loop (a replayed window runs the commands open loop), so the windows are 50 ms
(:data:`WINDOW`).

Not done yet: identifying the values from such a log (measured on a 1 s log, seed 0).
The squared normalized residual, each window's start refined, is 36 000 at the truth
(every reading within 1.95 x its noise), 4.3 million at the MJCF.  ``fit`` (the
windows' starts and the parameters together, ``mujoco.sysid``) from the MJCF's values
ends after 14 Jacobians at 1.2 million: the wheels' friction at the top of its box
(0.0707 N m, ten times the size read from the wheel's own inertia), damping near 0,
the shank's mass +103 %, intervals far too narrow.  A Gauss-Newton on the parameters
alone, each window's start eliminated (projected out of the Jacobian), reaches the
same point from the MJCF's values and barely moves from a guess inside the box (1.03
million): over 50 ms windows the starts' corrections absorb most of what the
parameters do, so the cost is flat along them and rough across.  Longer windows
would let the parameters show but the balance diverges open loop within them: at
200 ms windows the fit stops at the same bound.  With a robot whose wheels have less
(0.01 N m s/rad, 0.02 N m) the fit stops elsewhere but as wrong (friction 0.042 and
0.062 N m, no damping, residual 8 x the noise), and its own model replays the log at
2.6 x the noise, beyond ``check model``'s 2: the margin of the check above is thin.
"""

from __future__ import annotations

import mujoco
import numpy as np

from crossdyn import mjcf
from crossdyn.controllers.biped import Reference
from crossdyn.experiments.biped.closed_loop import Scenario, _plug, _Sensors
from crossdyn.experiments.biped.model import HIPS, STANCE, biped_params
from crossdyn.experiments.biped.scenarios import CONTROL_PERIOD, controller_for, stance_height

__all__ = ["MODEL", "ROBOT", "WINDOW", "NOISE", "robot_spec", "record_closed_loop", "initial_pose"]

MODEL = "wheel_legged_biped"
# The robot's truth, by --fit QUANTITY (the delay is applied by the recorder, or natively by robot_spec).
ROBOT = {"body:left_front_shank:mass": 0.26, "joint:left_wheel:damping": 0.02, "joint:right_wheel:damping": 0.02,
         "joint:left_wheel:frictionloss": 0.05, "joint:right_wheel:frictionloss": 0.05, "delay": 0.0005}
# Replayed window, s: the balance diverges open loop (pitch ~e^(7 t)) and a noisy start's error with
# it; at 50 ms the robot's own model replays its log within 1.9 x the noise, at 100 ms within 2.4 x.
WINDOW = 0.05
# Reading noise (standard deviations): encoders 0.5 mrad, their speeds 10 mrad/s, gyro 5 mrad/s,
# the orientation quaternion's components 0.25e-3 (0.5 mrad of attitude).
NOISE = {"qpos": 5e-4, "qvel": 1e-2, "imu_gyro": 5e-3, "imu_quat": 2.5e-4}


def robot_spec(native_delay: bool = True) -> mujoco.MjSpec:
    """The robot: the shipped biped with the :data:`ROBOT` values (a shank's inertia scales with its mass).

    Args:
      native_delay: give the actuators the delay (MuJoCo's own ``delay``/``nsample``), so the
        model replays the log as the robot; False for the recorder, which delays the commands itself.
    """
    spec = mujoco.MjSpec.from_file(str(mjcf.path(MODEL)))
    for key, value in ROBOT.items():
        if key == "delay":
            if native_delay:
                for actuator in spec.actuators:
                    actuator.delay, actuator.nsample = value, 10
            continue
        kind, name, attr = key.split(":")
        if kind == "body":
            for geom in spec.body(name).geoms:  # the shank's one capsule carries its mass and inertia
                geom.mass = value
        elif attr == "damping":
            spec.joint(name).damping = np.array([value, 0.0, 0.0])
        else:
            spec.joint(name).frictionloss = value
    return spec


def _reference(height: float):
    """Drive back and forth, turn and change height while balancing: what moves every fitted parameter."""
    def reference(t: float) -> Reference:
        return Reference(velocity=0.3 * np.sin(2 * np.pi * 0.7 * t), yaw=0.3 * np.sin(2 * np.pi * 0.4 * t),
                         height=height + 0.03 * np.sin(2 * np.pi * 0.9 * t))
    return reference


def initial_pose(model: mujoco.MjModel) -> np.ndarray:
    """The balanced stance the runs start from, (nq,)."""
    from crossdyn.experiments.biped.closed_loop import initial_state

    return initial_state(model, biped_params(model), Scenario(1.0, STANCE, _reference(0.0)))


def record_closed_loop(model: mujoco.MjModel, duration: float, *, delay: float = ROBOT["delay"],
                       seed: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Run the biped's controller on ``model`` and log what a real biped would: ``(time (N,), columns)``.

    Every control period (1 kHz) the sensors are read at the current state with noise
    (:data:`NOISE`), the controller (designed on the shipped MJCF) turns them into commands,
    and the motors act on the commands ``delay`` seconds late, interpolated linearly between
    the commands sent (as the replay assumes).  The log holds the commands sent
    (``ctrl:``), the hips' and wheels' encoders (``qpos:``, ``qvel:``) and the IMU
    (``sensor:imu_quat``, ``sensor:imu_gyro``): what the controller saw.

    Args:
      model: the robot (no native actuator delay).
      duration: seconds logged.
      delay: command delay, s.
      seed: the noise's seed.
    """
    rng = np.random.default_rng(seed)
    nominal = mujoco.MjModel.from_xml_path(str(mjcf.path(MODEL)))
    params = biped_params(nominal)
    scenario = Scenario(duration, STANCE, _reference(stance_height(STANCE, "")), control_period=CONTROL_PERIOD)
    sensors = _Sensors(model)
    actuators = [model.actuator(f"{s}_wheel").id for s in ("left", "right")] + [model.actuator(h).id for h in HIPS]
    n = int(round(duration / CONTROL_PERIOD))
    plug = _plug(controller_for(), params, scenario, sensors, actuators, n, True)
    data, reading = mujoco.MjData(model), mujoco.MjData(model)
    data.qpos[:] = initial_pose(model)
    mujoco.mj_forward(model, data)
    per = int(round(CONTROL_PERIOD / model.opt.timestep))
    encoders = [model.joint(j).name for j in range(model.njnt)
                if model.joint(j).name in HIPS or model.joint(j).name.endswith("_wheel")]
    columns_of = {f"qpos:{j}": (model.sensor(f"{j}_pos").adr[0], NOISE["qpos"]) for j in encoders}
    columns_of |= {f"qvel:{j}": (model.sensor(f"{j}_vel").adr[0], NOISE["qvel"]) for j in encoders}
    columns_of |= {f"sensor:{s}:{k}": (model.sensor(s).adr[0] + k, NOISE[s])
                   for s in ("imu_quat", "imu_gyro") for k in range(int(model.sensor(s).dim[0]))}
    index = np.array([i for i, _ in columns_of.values()])
    sigma = np.array([s for _, s in columns_of.values()])
    time, sent, read = np.zeros(n), np.zeros((n, model.nu)), np.zeros((n, index.size))
    command = np.zeros(model.nu)
    for k in range(n):
        reading.qpos[:], reading.qvel[:], reading.time = data.qpos, data.qvel, data.time
        mujoco.mj_forward(model, reading)  # the sensors now, not as the last physics step left them
        sensed = reading.sensordata.copy()
        sensed[index] += sigma * rng.standard_normal(index.size)
        if not plug.write_command(data.time, sensed, command):
            raise RuntimeError(f"the biped's controller stopped at t = {data.time:.3f} s")
        time[k], sent[k], read[k] = data.time, command, sensed[index]
        for _ in range(per):
            late = (data.time - delay) / CONTROL_PERIOD  # in control periods since the start
            i = int(np.floor(late))
            if i < 0:
                data.ctrl[:] = sent[0]
            elif i >= k:
                data.ctrl[:] = sent[k]
            else:
                data.ctrl[:] = sent[i] + (late - i) * (sent[i + 1] - sent[i])
            mujoco.mj_step(model, data)
    columns = {f"ctrl:{model.actuator(a).name}": sent[:, a] for a in range(model.nu)}
    columns |= {key: read[:, c] for c, key in enumerate(columns_of)}
    return time, columns
