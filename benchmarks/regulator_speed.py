"""The closed loop with crossdyn's LQR regulator vs a hand-written mj_step loop computing the same ``u = u_op - K x``.

Both run the cart-pole (RK4, 2 ms step) from the same tilted pose for the same
number of steps, one physics step per control step (the loop's worst case).  The
hand loop binds MuJoCo's arrays once and computes
``u_op - K @ concatenate([qpos - qpos_op, qvel - qvel_op])`` each step, writing
``ctrl``; ``simulate`` runs :class:`~crossdyn.experiments.core.regulator.Regulator`
and records its trace.  Optionally with imperfections (sensor noise on both
sensors, a one-period delay), which the hand loop then applies too.  Runs alternate
and the best CPU time of each is kept, so a burst of other load inflates neither
alone.  The aim: loop / hand <= 1.3.

    python benchmarks/regulator_speed.py [--repeats R] [--steps N] [--imperfections]
"""

from __future__ import annotations

import collections
import time

import mujoco
import numpy as np

from crossdyn.experiments.cart_pole import design
from crossdyn.experiments.core.imperfections import Delay, SensorNoise
from crossdyn.experiments.core.loop.simulate import simulate
from crossdyn.experiments.core.models import load_model
from timing import best_alternating, command_line  # benchmarks/timing.py (the script folder is on sys.path)


def main() -> None:
    parser = command_line(__doc__, 7)
    parser.add_argument("--steps", type=int, default=20_000, help="physics (and control) steps per run")
    parser.add_argument("--imperfections", action="store_true",
                        help="sensor noise on both sensors and a one-period delay, in both loops")
    args = parser.parse_args()
    model = load_model("cart_pole")
    reg = design({})
    lin, K = reg.linearization, reg.design.K
    h, n = float(model.opt.timestep), args.steps
    start_pose = np.array([0.0, 0.2])
    imperfect = [SensorNoise("cart_pos", std=1e-4), SensorNoise("pole_angle", std=1e-4), Delay(1)] \
        if args.imperfections else []

    def hand() -> float:
        data = mujoco.MjData(model)
        mujoco.mj_resetDataKeyframe(model, data, model.key("upright").id)
        data.qpos[:] = start_pose
        mujoco.mj_forward(model, data)
        qpos, qvel, ctrl, raw = data.qpos, data.qvel, data.ctrl, data.sensordata
        q0, v0, u0 = lin.qpos, lin.qvel, lin.ctrl
        rng, sensed = np.random.default_rng(0), raw.copy()
        queue = collections.deque([np.zeros(model.nu)])
        begin = time.process_time()
        for _ in range(n):
            if imperfect:
                sensed[:] = raw  # what a controller reading the sensors would see
                sensed[0:1] += rng.normal(0.0, 1e-4, 1)
                sensed[1:2] += rng.normal(0.0, 1e-4, 1)
                queue.append(u0 - K @ np.concatenate([qpos - q0, qvel - v0]))
                ctrl[:] = queue.popleft()
            else:
                ctrl[:] = u0 - K @ np.concatenate([qpos - q0, qvel - v0])
            mujoco.mj_step(model, data)
        return time.process_time() - begin

    def loop() -> float:
        begin = time.process_time()
        simulate(model, reg, n * h, keyframe="upright", qpos=start_pose, imperfections=imperfect)
        return time.process_time() - begin

    best = best_alternating({"loop": loop, "hand": hand}, args.repeats)
    lo, ha = best["loop"], best["hand"]
    per = 1e6 / n
    what = " with sensor noise and a one-period delay" if imperfect else ""
    print(f"cart-pole LQR{what}, {n} steps of {h * 1e3:g} ms; CPU time, best of {args.repeats}, runs alternating")
    print(f"  hand-written mj_step loop, u = u_op - K x   {ha:6.3f} s  ({ha * per:.2f} us per step)")
    print(f"  simulate() with regulator()                 {lo:6.3f} s  ({lo * per:.2f} us per step)")
    print(f"  ratio loop/hand = {lo / ha:.2f} (aim <= 1.3)")


if __name__ == "__main__":
    main()
