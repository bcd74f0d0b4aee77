"""One control step of the biped, alone: the compiled step vs the readable estimator and controller.

``benchmarks/closed_loop_speed.py`` measures what the controller adds to a whole
closed-loop run; this script isolates the step itself, so a change to
``controllers/biped/compiled.py`` or ``controllers/biped/estimation.py`` shows up undiluted by
the physics.  It first records the sensor arrays of a balance recovery (the compiled
step in the loop), then replays them through

- ``compiled.step`` (estimate, controller, log row: what ``simulate`` runs per step),
- ``Estimator.update`` followed by ``BipedController.__call__`` (the readable path
  the imperfections, ground truth and controller subclasses use),

and prints the time per step (this process's CPU time, best of ``--repeats``, so a
burst of other load on the shared machine does not count) and their ratio.

    python benchmarks/control_step_speed.py [--repeats R] [--duration S]
"""

from __future__ import annotations

import argparse
import time

import mujoco
import numpy as np

from crossdyn.controllers.biped import compiled
from crossdyn.controllers.biped.controller import Reference
from crossdyn.controllers.biped.estimation import Estimator
from crossdyn.experiments.biped.closed_loop import geometry, initial_state, make_controller
from crossdyn.experiments.biped.model import HIPS, nominal_params
from crossdyn.experiments.biped.scenarios import CONTROL_PERIOD, balance_scenario, robot

# The estimator's sensors, in its argument order (quat, gyro, accel, hip pos, hip vel, wheel pos, wheel vel).
SENSORS = ("imu_quat", "imu_gyro", "imu_accel", *(f"{h}_pos" for h in HIPS), *(f"{h}_vel" for h in HIPS),
           "left_wheel_pos", "right_wheel_pos", "left_wheel_vel", "right_wheel_vel")


def _indices(model: mujoco.MjModel) -> tuple[np.ndarray, list[int]]:
    """``compiled.step``'s index array (sensor entries, then wheel and hip actuators) and the sensor part alone."""
    sensors = [int(model.sensor(name).adr[0]) + k for name in SENSORS for k in range(int(model.sensor(name).dim[0]))]
    actuators = [model.actuator(f"{s}_wheel").id for s in ("left", "right")] + [model.actuator(h).id for h in HIPS]
    return np.array(sensors + actuators, dtype=np.int64), sensors


def record(duration: float) -> tuple[list[np.ndarray], np.ndarray]:
    """The sensor arrays of a balance recovery from a 10 deg tilt, one per control step, and the index array."""
    model, p = robot(), nominal_params()
    sc = balance_scenario(10.0, duration)
    data = mujoco.MjData(model)
    data.qpos[:] = initial_state(model, p, sc)
    mujoco.mj_forward(model, data)
    params, powers, state = compiled.pack(make_controller(p, CONTROL_PERIOD), geometry(p))
    index, _ = _indices(model)
    steps, substeps = int(round(duration / CONTROL_PERIOD)), int(round(CONTROL_PERIOD / model.opt.timestep))
    log, arrays = np.empty((steps, compiled.LOG_WIDTH)), []
    for i in range(steps):
        arrays.append(data.sensordata.copy())
        if not compiled.step(data.time, 0.0, 0.0, np.nan, data.sensordata, index, data.ctrl, params, powers, state,
                             log, i):
            raise RuntimeError("non-finite sensor reading while recording")
        mujoco.mj_step(model, data, substeps)
    return arrays, index


def time_compiled(arrays: list[np.ndarray], index: np.ndarray) -> float:
    """CPU seconds for ``compiled.step`` over every recorded array, from a fresh controller state."""
    p = nominal_params()
    params, powers, state = compiled.pack(make_controller(p, CONTROL_PERIOD), geometry(p))
    ctrl, log = np.zeros(int(index.max()) + 1), np.empty((len(arrays), compiled.LOG_WIDTH))
    step, nan = compiled.step, np.nan
    start = time.process_time()
    for i, sensordata in enumerate(arrays):
        step(i * CONTROL_PERIOD, 0.0, 0.0, nan, sensordata, index, ctrl, params, powers, state, log, i)
    return time.process_time() - start


def time_readable(arrays: list[np.ndarray], sensors: list[int]) -> float:
    """CPU seconds for ``Estimator.update`` and ``BipedController.__call__`` over every recorded array."""
    p = nominal_params()
    estimator, controller, ref = Estimator(geometry(p)), make_controller(p, CONTROL_PERIOD), Reference()
    cuts = np.cumsum([4, 3, 3, 4, 4, 2])  # quat, gyro, accel, hip pos, hip vel, wheel pos | wheel vel
    readings = [tuple(tuple(part) for part in np.split(np.asarray(a)[sensors], cuts)) for a in arrays]
    start = time.process_time()
    for i, r in enumerate(readings):
        controller(i * CONTROL_PERIOD, estimator.update(*r), ref)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--duration", type=float, default=4.0, help="simulated seconds recorded (1 kHz steps)")
    args = parser.parse_args()
    arrays, index = record(args.duration)
    _, sensors = _indices(robot())
    time_compiled(arrays[:10], index)  # compile (or load Numba's cache) outside the timing
    n = len(arrays)
    fast = min(time_compiled(arrays, index) for _ in range(args.repeats)) / n
    readable = min(time_readable(arrays, sensors) for _ in range(args.repeats)) / n
    print(f"{n} control steps, best of {args.repeats} (CPU time per step)")
    print(f"compiled step:                       {fast * 1e6:7.3f} us")
    print(f"Estimator.update + BipedController:  {readable * 1e6:7.3f} us  ({readable / fast:.1f}x the compiled step)")


if __name__ == "__main__":
    main()
