"""Per-state cost: batched spatial RNEA vs a Python loop of mj_inverse, on spatial_arm.

Prints, for N states (default 10,000) of ``mjcf/spatial_arm.xml`` (7 dofs), the
per-state time of
  1. ``analytic.rnea.rnea`` on the whole batch (NumPy, one call),
  2. a bare Python loop of ``mj_inverse`` over the same states,
and their ratio; the issue aims at <= 1 (our batch beats MuJoCo's per-call path
from Python).  Also the unit-vector mass matrix (nv + 1 RNEA passes in one batch)
vs a loop of ``mj_forward`` + ``mj_fullM``.  Best of a few repeats, since the
machine is shared.

    python benchmarks/rnea_speed.py [--states N] [--repeats R] [--model NAME]
"""

from __future__ import annotations

import argparse
import functools

import mujoco
import numpy as np

from crossdyn.analytic.rnea import rnea
from crossdyn.analytic.unit_vector import mass_matrix_and_bias
from crossdyn.experiments.core.checks.common import sample_states
from crossdyn.experiments.core.checks.tree import tree_from_model
from crossdyn.experiments.core.models import load_model
from timing import best_time  # benchmarks/timing.py (the script folder is on sys.path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="spatial_arm")
    args = parser.parse_args()

    model = load_model(args.model)
    tree = tree_from_model(model)
    q, qd, qdd = sample_states(model, args.states, seed=0)
    data = mujoco.MjData(model)
    n = args.states

    def bare_inverse():
        for k in range(n):
            data.qpos[:] = q[k]
            data.qvel[:] = qd[k]
            data.qacc[:] = qdd[k]
            mujoco.mj_inverse(model, data)

    dense = np.empty((model.nv, model.nv))

    def bare_mass_matrix():
        for k in range(n):
            data.qpos[:] = q[k]
            data.qvel[:] = qd[k]
            mujoco.mj_forward(model, data)
            mujoco.mj_fullM(model, data, dense)

    t_mj = best_time(bare_inverse, args.repeats)[0] / n
    t_ours = best_time(lambda: rnea(tree, q, qd, qdd), args.repeats)[0] / n
    t_mj_M = best_time(bare_mass_matrix, args.repeats)[0] / n
    t_ours_M = best_time(lambda: mass_matrix_and_bias(functools.partial(rnea, tree), q, qd), args.repeats)[0] / n
    print(f"{args.model} (nv = {model.nv}), {n} states, best of {args.repeats}")
    print(f"  Python loop of mj_inverse           {t_mj * 1e6:8.3f} us/state")
    print(f"  batched analytic.rnea               {t_ours * 1e6:8.3f} us/state   "
          f"rnea/mj_inverse = {t_ours / t_mj:.2f} (aim <= 1)")
    print(f"  Python loop of mj_forward+mj_fullM  {t_mj_M * 1e6:8.3f} us/state")
    print(f"  unit-vector A, b (nv+1 RNEA passes) {t_ours_M * 1e6:8.3f} us/state   ratio = {t_ours_M / t_mj_M:.2f}")


if __name__ == "__main__":
    main()
