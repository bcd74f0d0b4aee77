"""How fast is ``crossdyn identify``?  Against ``mujoco.sysid``'s optimizer run directly, and the arm's time.

1. The same least-squares problem (the hidden-truth arm's five parameters and every
   window's start, tests/identify_truth.py) solved twice from the same point: by
   identify's fit (mujoco.sysid.optimize with the Jacobian computed window-wise:
   1 + p + 2 d batched rollouts) and by ``mujoco.sysid.optimize`` called directly,
   its Jacobian by mujoco.minimize's finite differences (one rollout of the whole log
   per column).  Printed: both times and their ratio (identify / sysid direct).
2. The arm: a 20 s log, five parameters, end to end (``Problem`` + ``fit``).

    python benchmarks/identify_speed.py [--duration 4] [--arm-duration 20] [--threads 2]
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np
from absl import logging as absl_logging
from mujoco import sysid

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the hidden truth lives with the tests

from crossdyn.experiments.core.identify.fit import Problem, fit  # noqa: E402
from crossdyn.experiments.core.identify.logs import load_log
from crossdyn.experiments.core.identify.spec import parse_fit  # noqa: E402
from identify_truth import ARM, FIT, TRUTH, arm_log  # noqa: E402


def _problem(path: Path, threads: int) -> Problem:
    model = mujoco.MjModel.from_xml_path(str(ARM))
    spec = mujoco.MjSpec.from_file(str(ARM))
    return Problem(spec, parse_fit(FIT, model, spec, ARM.name), [load_log(path, model)], threads=threads)


def _sysid_direct(problem: Problem) -> tuple[float, np.ndarray]:
    """mujoco.sysid.optimize on the same residual, from the same start, its own finite-difference Jacobian."""
    started = time.perf_counter()
    x0 = problem.refine_starts(problem.x0())
    low, high = problem.bounds()
    params = sysid.ParameterDict()
    params.add(sysid.Parameter("x", x0, low, high))

    def residual_fn(x, _params):
        x = np.asarray(x, float)
        if x.ndim == 2:
            return [np.column_stack([problem.predict(x[:, k]) for k in range(x.shape[1])])], None, None
        return [problem.predict(x)], None, None

    absl_logging.set_verbosity(absl_logging.ERROR)
    opt, _ = sysid.optimize(params, residual_fn, optimizer="mujoco", verbose=False, max_iters=50, x_scale="jac",
                            output=io.StringIO())
    return time.perf_counter() - started, np.asarray(opt["x"].value, float).reshape(-1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=4.0, help="log length of the comparison, s")
    parser.add_argument("--arm-duration", type=float, default=20.0, help="log length of the arm's timing, s")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        short = arm_log(Path(folder) / "short.csv", seed=0, duration=args.duration)
        problem = _problem(short, args.threads)
        started, cpu = time.perf_counter(), time.process_time()
        ours = fit(problem)
        t_ours, c_ours = time.perf_counter() - started, time.process_time() - cpu
        problem.close()
        problem = _problem(short, args.threads)
        cpu = time.process_time()
        t_direct, x_direct = _sysid_direct(problem)
        c_direct = time.process_time() - cpu
        problem.close()
        print(f"same problem ({args.duration:g} s log, {len(FIT)} parameters + {problem.n - problem.p} window-start "
              f"values): identify {t_ours:.1f} s ({c_ours:.1f} s CPU), mujoco.sysid.optimize direct {t_direct:.1f} s "
              f"({c_direct:.1f} s CPU), ratio {t_ours / t_direct:.2f} (CPU {c_ours / c_direct:.2f})")
        gap = np.max(np.abs(ours.x[: problem.p] - x_direct[: problem.p]) / np.concatenate(
            [t.scale for t in problem.targets]))
        print(f"  the two optima agree to {gap:.1e} of each parameter's scale")

        long = arm_log(Path(folder) / "long.csv", seed=0, duration=args.arm_duration)
        started, cpu = time.perf_counter(), time.process_time()
        problem = _problem(long, args.threads)
        result = fit(problem)
        problem.close()
        t_arm, cpu_arm = time.perf_counter() - started, time.process_time() - cpu
        print(f"arm: {args.arm_duration:g} s log, {len(FIT)} parameters: {t_arm:.1f} s wall, {cpu_arm:.1f} s CPU "
              f"({result.iterations} Jacobians, {args.threads} threads; on a loaded machine wall >> CPU / threads)")
        for target, value, half in zip(result.targets, result.value, result.half_width, strict=True):
            print(f"  {target.spec:32s} {value[0]:.6g} +- {half[0]:.2g} (truth {TRUTH[target.spec]:g})")


if __name__ == "__main__":
    main()
