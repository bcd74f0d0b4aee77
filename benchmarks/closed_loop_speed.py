"""Closed-loop overhead: the balance-recovery run vs a bare mj_step loop of the same motion.

The bare loop replays the torques the controller produced, so MuJoCo does the same
physics (contacts, loop closures) in both; the ratio is what the controller, the
state estimate and the logging add.  The issue's aim: ratio <= 2.

    python benchmarks/closed_loop_speed.py [--repeats R]
"""

from __future__ import annotations

import argparse
import time

import mujoco
import numpy as np

from crossdyn.experiments.biped.scenarios import CONTROL_PERIOD, balance_scenario, controller_for
from crossdyn.experiments.biped.model import HIPS, biped_params, build
from crossdyn.experiments.biped.closed_loop import initial_state, simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--duration", type=float, default=4.0)
    args = parser.parse_args()

    model = build()
    p = biped_params(model)
    sc = balance_scenario(10.0, args.duration)
    closed, trace = [], None
    for _ in range(args.repeats):
        start = time.perf_counter()
        trace = simulate(model, sc, controller_for({}))
        closed.append(time.perf_counter() - start)

    # Per control step: the four hip commands are the legs' torques plus the swing
    # correction, which the trace keeps only as the common part; replaying the
    # common part is the same physics to within the swing PD's tiny correction.
    hips = np.repeat(trace.hip_torque, 2, axis=1)
    steps = int(round(CONTROL_PERIOD / model.opt.timestep))
    hip_act = [model.actuator(h).id for h in HIPS]
    wheel_act = [model.actuator(f"{s}_wheel").id for s in ("left", "right")]
    bare = []
    for _ in range(args.repeats):
        data = mujoco.MjData(model)
        data.qpos[:] = initial_state(model, p, sc)
        mujoco.mj_forward(model, data)
        start = time.perf_counter()
        for k in range(trace.t.size):
            data.ctrl[wheel_act] = trace.wheel_torque[k]
            data.ctrl[hip_act] = hips[k]
            for _ in range(steps):
                mujoco.mj_step(model, data)
        bare.append(time.perf_counter() - start)

    c, b = min(closed), min(bare)
    print(f"{args.duration:g} s simulated, {trace.t.size} control steps of {CONTROL_PERIOD * 1e3:g} ms, "
          f"{steps} physics steps each; best of {args.repeats}")
    print(f"  closed loop (controller + estimate + logging + physics)  {c:6.2f} s")
    print(f"  bare mj_step loop, same torques                          {b:6.2f} s")
    print(f"  ratio closed/bare = {c / b:.2f} (aim <= 2)")


if __name__ == "__main__":
    main()
