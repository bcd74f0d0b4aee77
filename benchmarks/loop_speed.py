"""The generic closed loop's own cost: a trivial controller on the cart-pole vs a bare mj_step loop.

Both step the cart-pole (RK4, 2 ms) with the same constant control for the same
number of steps, one physics step per control step (the loop's worst case: its
per-step work is not shared over several physics steps).  The loop's extra work
per step: the controller call and its check, writing ``ctrl``, one row of the
trace (``qpos``, ``qvel``, sensors, control) and the divergence checks.  Runs
alternate and the best of each is kept (CPU time of this process), so a burst of
other load on the shared machine inflates neither alone.  The issue's aim: 1.3x.

    python benchmarks/loop_speed.py [--repeats R] [--steps N] [--control-steps K]
"""

from __future__ import annotations

import time

import mujoco
import numpy as np

from crossdyn import simulate
from crossdyn.experiments.core.models import load_model
from timing import best_alternating, command_line  # benchmarks/timing.py (the script folder is on sys.path)


def main() -> None:
    parser = command_line(__doc__, 7)
    parser.add_argument("--steps", type=int, default=20_000, help="physics steps per run")
    parser.add_argument("--control-steps", type=int, default=1, help="physics steps per control step")
    args = parser.parse_args()
    model = load_model("cart_pole")
    h, k = model.opt.timestep, args.control_steps
    push = np.full(1, 0.1)

    def trivial(t, obs):
        return push

    def bare() -> float:
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        start = time.process_time()
        for _ in range(args.steps // k):
            data.ctrl[:] = push
            mujoco.mj_step(model, data, k)
        return time.process_time() - start

    def loop() -> float:
        start = time.process_time()
        simulate(model, trivial, args.steps * h, control_dt=k * h)
        return time.process_time() - start

    best = best_alternating({"loop": loop, "bare": bare}, args.repeats)
    lo, ba = best["loop"], best["bare"]
    per = 1e6 / (args.steps // k)
    print(f"cart-pole, {args.steps} physics steps of {h * 1e3:g} ms, {k} per control step; CPU time, best of "
          f"{args.repeats}, runs alternating")
    print(f"  bare mj_step loop (ctrl written each step)   {ba:6.3f} s  ({ba * per:.2f} us per control step)")
    print(f"  simulate() with a trivial controller         {lo:6.3f} s  ({lo * per:.2f} us per control step)")
    print(f"  ratio loop/bare = {lo / ba:.2f} (aim <= 1.3): {(lo - ba) * per:.2f} us per control step beyond the "
          "physics")


if __name__ == "__main__":
    main()
