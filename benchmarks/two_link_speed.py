"""Per-state cost: vectorized analytic two-link model vs MuJoCo's inverse dynamics.

Prints, for N states (default 100,000), the per-state time of
  1. the vectorized analytic ``lagrange`` and ``newton-euler`` variants,
  2. the ``experiments.core.truth.inverse_dynamics`` wrapper (row loop over mj_inverse),
  3. a bare Python loop of ``mj_inverse``,
and the ratios the foundation issue aims at: analytic <= 0.1x the MuJoCo path,
wrapper <= 2x the bare loop.  Best of a few repeats, since the machine is shared.

    python benchmarks/two_link_speed.py [--states N] [--repeats R]
"""

from __future__ import annotations

import functools

import mujoco

from crossdyn.analytic.two_link import VARIANTS
from crossdyn.experiments.core.checks.common import sample_states
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.truth import inverse_dynamics
from crossdyn.experiments.two_link import two_link_params
from timing import best_time, command_line  # benchmarks/timing.py (the script folder is on sys.path)


def main() -> None:
    args = command_line(__doc__, 3, states=100_000).parse_args()

    model = load_model("two_link_arm")
    params = two_link_params(model)
    q, qd, qdd = sample_states(model, args.states, seed=0)
    data = mujoco.MjData(model)

    def bare_loop():
        for k in range(q.shape[0]):
            data.qpos[:] = q[k]
            data.qvel[:] = qd[k]
            data.qacc[:] = qdd[k]
            mujoco.mj_inverse(model, data)

    n = args.states
    t_bare = best_time(bare_loop, args.repeats)[0] / n
    t_wrap = best_time(lambda: inverse_dynamics(model, q, qd, qdd, data=data), args.repeats)[0] / n
    print(f"{n} states, best of {args.repeats}")
    print(f"  bare mj_inverse loop          {t_bare * 1e6:8.3f} us/state")
    print(f"  inverse_dynamics wrapper      {t_wrap * 1e6:8.3f} us/state   "
          f"wrapper/bare = {t_wrap / t_bare:.2f} (aim <= 2)")
    for name in ("lagrange", "newton-euler"):
        t = best_time(functools.partial(VARIANTS[name], params, q, qd, qdd), args.repeats)[0] / n
        print(f"  analytic {name:<20} {t * 1e6:8.3f} us/state   analytic/wrapper = {t / t_wrap:.3f} (aim <= 0.1)")


if __name__ == "__main__":
    main()
