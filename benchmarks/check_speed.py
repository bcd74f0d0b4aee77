"""Cost of ``check jacobian`` and ``check mass-matrix`` against MuJoCo alone, on a 7-dof arm.

For N states (default 10,000) of ``tests/models/arm7.xml`` prints the time of

  1. MuJoCo alone, the same calls the check makes for its truth, in a bare Python
     loop: ``mj_kinematics``, ``mj_comPos`` and ``mj_jacSite`` per state (Jacobian);
     ``mj_kinematics``, ``mj_comPos``, ``mj_crb`` and ``mj_fullM`` (mass matrix);
  2. the whole check (``check_jacobian`` / ``check_mass_matrix`` on seeded states),
     with a user's function that takes the batch (crossdyn's own tree Jacobian and
     mass matrix, ``analytic.kinematics``);
  3. that user's function alone on the same states,

and the ratios check / MuJoCo alone, and (check - user's function) / MuJoCo alone:
the check's own cost.  The aim is a check within 2x of MuJoCo alone; it is judged
on the check's own cost, since the user's function costs what it costs wherever
it is called (here crossdyn's NumPy tree code, about as fast as MuJoCo itself for
the Jacobian and slower for the mass matrix), and the last lines say whether each
check meets it, on its own cost and in total.  Best of a few repeats (the
machine is shared).

    python benchmarks/check_speed.py [--states N] [--repeats R]
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

import mujoco
import numpy as np

from crossdyn.analytic import kinematics
from crossdyn.experiments.core.checks.common import sample_states
from crossdyn.experiments.core.checks.jacobian import check_jacobian
from crossdyn.experiments.core.checks.mass_matrix import check_mass_matrix
from crossdyn.experiments.core.checks.tree import tree_from_model
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.truth import truth_model
from timing import best_time  # benchmarks/timing.py (the script folder is on sys.path)

ARM = Path(__file__).resolve().parent.parent / "tests" / "models" / "arm7.xml"
AIM = 2.0  # a check within 2x of the time MuJoCo alone takes for the same calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n = args.states

    model = load_model(ARM)
    rigid = truth_model(model)  # the mass-matrix check's truth (--dynamics rigid-body)
    tree = tree_from_model(rigid)
    site = model.site("tool")
    body, point = int(site.bodyid[0]) - 1, np.array(model.site_pos[site.id])
    q = sample_states(model, n, seed=0)[0]

    data = mujoco.MjData(model)
    jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    J = np.empty((n, 6, model.nv))

    def mujoco_jacobian():
        for k in range(n):
            data.qpos[:] = q[k]
            mujoco.mj_kinematics(model, data)
            mujoco.mj_comPos(model, data)
            mujoco.mj_jacSite(model, data, jacp, jacr, site.id)
            J[k, :3], J[k, 3:] = jacp, jacr

    rigid_data = mujoco.MjData(rigid)
    M = np.empty((n, model.nv, model.nv))

    def mujoco_mass_matrix():
        for k in range(n):
            rigid_data.qpos[:] = q[k]
            mujoco.mj_kinematics(rigid, rigid_data)
            mujoco.mj_comPos(rigid, rigid_data)
            mujoco.mj_crb(rigid, rigid_data)
            mujoco.mj_fullM(rigid, rigid_data, M[k])

    def jacobian(qs):
        return kinematics.point_jacobian(tree, qs, body, point)

    def mass_matrix(qs):
        return kinematics.mass_matrix(tree, qs)

    rows = []
    for what, bare, user, check in (
        ("jacobian", mujoco_jacobian, jacobian,
         lambda: check_jacobian(jacobian, model, site="tool", samples=n, seed=0)),
        ("mass-matrix", mujoco_mass_matrix, mass_matrix,
         lambda: check_mass_matrix(mass_matrix, model, samples=n, seed=0)),
    ):
        t_bare = best_time(bare, args.repeats)[0]
        t_user = best_time(functools.partial(user, q), args.repeats)[0]
        t_check, report = best_time(check, args.repeats)
        if not getattr(report, "passed", False):  # a benchmark of a check that fails measures something else
            diagnosis = getattr(report, "diagnosis", report)
            raise SystemExit(f"the {what} check failed: {diagnosis}")
        rows.append((what, t_bare, t_check, t_user))

    print(f"{n:,} states of {ARM.name} ({model.nv} dofs), best of {args.repeats}")
    print(f"{'check':<12} {'MuJoCo alone':>13} {'check':>9} {'your fn':>9} {'check/MuJoCo':>13} "
          f"{'(check - fn)/MuJoCo':>20}")
    for what, t_bare, t_check, t_user in rows:
        print(f"{what:<12} {t_bare * 1e3:>10.1f} ms {t_check * 1e3:>6.1f} ms {t_user * 1e3:>6.1f} ms "
              f"{t_check / t_bare:>12.2f}x {(t_check - t_user) / t_bare:>19.2f}x")
    for what, t_bare, t_check, t_user in rows:
        own, total = (t_check - t_user) / t_bare, t_check / t_bare
        print(f"{what}: the check's own cost {own:.2f}x MuJoCo alone: aim (<= {AIM:g}x) "
              f"{'met' if own <= AIM else 'MISSED'}; with your function's time {total:.2f}x "
              f"({'within' if total <= AIM else 'over'} {AIM:g}x)")


if __name__ == "__main__":
    main()
