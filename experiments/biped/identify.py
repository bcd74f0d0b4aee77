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

Experiment ``biped-identify`` fits the shank's mass, both wheels' damping and friction
and the delay to such a log, starting from the MJCF as shipped (no damping, no
friction, no delay).  ``crossdyn check model`` on the same logs: the robot's own model
replays them within 1.1-1.3 x the noise, the MJCF does not (tests/test_identify_biped.py).

Why 0.5 ms and short windows: the biped's leg loop loses its balance with a command
delay of 0.75 ms or more, and its balance is unstable open loop (a replayed window
runs the commands open loop), so the windows are 50 ms (:data:`WINDOW`).

How close: the fit lands within about 1 % of every truth (1 s logs, seeds 0-2), and 17
of the 18 truths fell inside their 95 % intervals.  Six honest 95 % intervals all hold
their truths only about three times in four, so the experiment holds every truth to
:data:`INTERVALS` times its interval (about 99.7 % each) and reports how many fell
inside the 95 % intervals themselves; the delay within :data:`DELAY_TOLERANCE`.
"""

from __future__ import annotations

import mujoco
import numpy as np

from ... import mjcf
from ...controllers.biped.controller import Reference
from ..core.identify.fit import Problem, fit_and_replay
from ..core.identify.logs import load_log, write_log
from ..core.identify.outputs import figure_signals, sentences
from ..core.identify.spec import parse_fit
from ..core.registry import experiment
from .closed_loop import Scenario, Sensors, actuators, initial_state, plug
from .model import HIPS, STANCE, biped_params
from .scenarios import CONTROL_PERIOD, controller_for, stance_height

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Identification: is the MJCF the robot?"
DERIVATION_PAGE = "identification"

__all__ = ["MODEL", "ROBOT", "WINDOW", "NOISE", "STATED", "FITS", "robot_spec", "record_closed_loop", "initial_pose",
           "judge"]

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
# The same, as identify and check model take a stated noise (--noise SIGNAL=VALUE).
STATED = {"qpos:*": NOISE["qpos"], "qvel:*": NOISE["qvel"], "sensor:imu_gyro": NOISE["imu_gyro"],
          "sensor:imu_quat": NOISE["imu_quat"]}
# What biped-identify fits, in --fit's words.
FITS = ["body:left_front_shank:mass", "joint:*_wheel:damping", "joint:*_wheel:frictionloss", "delay"]
# How many 95 % half-widths a fitted value may be from its truth: 1.5 (2.9 sigma, about 99.7 %), so that
# six parameters' honest intervals pass together about 98 % of the time (at 1, 74 %).
INTERVALS = 1.5
# The fitted delay's allowed error, s: a tenth of the control period (the fits land within 0.05 ms).
DELAY_TOLERANCE = 1e-4


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
    return initial_state(model, biped_params(model), Scenario(1.0, STANCE, _reference(0.0)))


def record_closed_loop(model: mujoco.MjModel, duration: float, *, delay: float = ROBOT["delay"],
                       seed: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Run the biped's controller on ``model`` and log what a real biped would: ``(time (N,), columns)``.

    Every control period (1 kHz) the sensors are read at the current state with noise
    (:data:`NOISE`), the controller (designed on the shipped MJCF) turns them into commands,
    and the motors act on the commands ``delay`` seconds late, interpolated linearly between
    the commands sent (the replay is told so: ``commands="linear"``).  The log holds the commands sent
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
    n = int(round(duration / CONTROL_PERIOD))
    controller = plug(controller_for(), params, scenario, Sensors(model), actuators(model), n, True)
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
        if not controller.write_command(data.time, sensed, command):
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


def judge(values: dict[str, float], halves: dict[str, float]) -> list[str]:
    """The fitted quantities farther from :data:`ROBOT` than allowed; [] passes.

    Args:
      values: ``{--fit quantity: fitted value}``.
      halves: ``{--fit quantity: its 95 % interval's half-width}``.
    """
    missed = []
    for key, value in values.items():
        allowed = DELAY_TOLERANCE if key == "delay" else INTERVALS * halves[key]
        if not abs(value - ROBOT[key]) <= allowed:
            missed.append(key)
    return missed


@experiment("biped-identify", summary="identify the biped's shank mass, wheel damping and friction and its "
                                      "command delay from its own closed-loop log",
            expected=f"every truth within {INTERVALS} x its 95 % interval, the delay within "
                     f"{DELAY_TOLERANCE * 1e3:.1f} ms")
def identify_biped(ctx) -> dict:
    duration = 0.5 if ctx.short else 1.0  # s of log: 10 or 20 windows
    robot = robot_spec(native_delay=False).compile()
    time, columns = record_closed_loop(robot, duration, seed=ctx.seed)
    path = write_log(ctx.out_dir / "robot.csv", time, columns)
    shipped = mujoco.MjModel.from_xml_path(str(mjcf.path(MODEL)))
    spec = mujoco.MjSpec.from_file(str(mjcf.path(MODEL)))
    # The robot above interpolates its commands between the ones sent (record_closed_loop): replayed so.
    problem = Problem(spec, parse_fit(FITS, shipped, spec, f"{MODEL}.xml"), [load_log(path, shipped)],
                      window=WINDOW, threads=1, noise=STATED, commands="linear")
    try:
        result, (measured,), (nominal,), (identified,) = fit_and_replay(problem)
    finally:
        problem.close()
    shown = ["qvel:left_wheel", "qvel:right_wheel", "qpos:left_front_hip", "sensor:imu_gyro"]
    ctx.savefig(figure_signals(time, {k: measured[k] for k in shown}, nominal, identified,
                               "wheel-legged biped: the robot's closed-loop log"), "identify.png")
    values = {t.spec: float(v[0]) for t, v in zip(result.targets, result.value, strict=True)}
    halves = {t.spec: float(h[0]) for t, h in zip(result.targets, result.half_width, strict=True)}
    inside = sum(abs(values[k] - ROBOT[k]) <= halves[k] for k in values)
    missed = judge(values, halves)
    return {"passed": not missed and all(result.identified),
            "measured": ("every value within bounds" if not missed else f"off: {', '.join(missed)}")
            + f"; {inside} of {len(values)} truths inside their intervals; delay {values['delay'] * 1e3:.3f} ms",
            "detail": "\n".join(sentences(result)),
            "errors_percent": {k: 100 * (v - ROBOT[k]) / ROBOT[k] for k, v in values.items()},
            "truths_inside": inside,
            "residual_rms": dict(next(iter(result.residual_after.values())))}
