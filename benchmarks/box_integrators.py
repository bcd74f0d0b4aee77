"""Per-step cost of the rigid-box integrators: the first-order rotation update, our RK4, MuJoCo's.

Prints, for the torque-free box of ``mjcf/rigid_box.xml`` (omega0 = [1, 1, 1]
rad/s, dt = 1 ms), the per-step wall time of
  1. ``analytic.rigid_box.lecture_euler`` (Python loop, one step = one Euler update),
  2. ``analytic.rigid_box.rk4`` (Python loop, four stages),
  3. MuJoCo's RK4 and Euler (``mj_step`` from Python, through the same sampling
     wrapper the experiments use, which copies the state out after every step),
and each one's ratio to MuJoCo's RK4, next to the |L| drift it reaches over the
run, so cost and accuracy can be read together.  Best of a few repeats, since
the machine is shared.

    python benchmarks/box_integrators.py [--steps N] [--repeats R]
"""

from __future__ import annotations

import copy

import mujoco
import numpy as np

from crossdyn.analytic import rigid_box as rb
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.rigid_box import OMEGA0, mujoco_trajectory, rigid_body_params
from timing import best_time, command_line  # benchmarks/timing.py (the script folder is on sys.path)


def main() -> None:
    args = command_line(__doc__, 3, steps=10_000).parse_args()

    model = load_model("rigid_box")
    params = rigid_body_params(model)
    dt = model.opt.timestep
    state = rb.BodyState.at_rest(omega=OMEGA0)

    def mj(integrator):
        m = copy.copy(model)
        m.opt.integrator = integrator
        return lambda: mujoco_trajectory(m, state, args.steps)

    runs = {
        "lecture (Python)": lambda: rb.lecture_euler(params, state, dt, args.steps),
        "rk4 (Python)": lambda: rb.rk4(params, state, dt, args.steps),
        "MuJoCo RK4": mj(mujoco.mjtIntegrator.mjINT_RK4),
        "MuJoCo Euler": mj(mujoco.mjtIntegrator.mjINT_EULER),
    }
    results = {name: best_time(fn, args.repeats) for name, fn in runs.items()}
    base = results["MuJoCo RK4"][0]
    print(f"{args.steps} steps of dt = {dt * 1e3:g} ms, best of {args.repeats}")
    print(f"{'integrator':<16}{'us/step':>10}{'x MuJoCo RK4':>14}{'|L| drift':>12}")
    for name, (seconds, tr) in results.items():
        L = np.linalg.norm(rb.angular_momentum(params, tr.R, tr.omega), axis=1)
        print(f"{name:<16}{1e6 * seconds / args.steps:>10.2f}{seconds / base:>14.1f}{L[-1] / L[0] - 1:>12.1e}")


if __name__ == "__main__":
    main()
