"""Are identify's intervals honest, and check model's verdicts right, on robots it was never tuned on?

For each zoo robot (tests/identify_zoo.py: a 7-dof arm with position servos, an acrobot
balanced upright, a quadruped standing on its feet, a cart-pole balanced in closed loop, a
pendulum on a 4096-count encoder) and the hidden-truth arm of tests/identify_truth.py, over
many noise seeds: a log of the robot's hidden truth is fitted and each truth is checked
against its interval (or counted "not identified"), and check model judges the truth's
own MJCF (a pass expected) and the model as shipped (a fail or an inconclusive expected).

Honest 95 % intervals hold the truth in about 38 of 40 seeds (35 or more is within the 95 %
range of an honest interval's count); the standardized error (fitted - truth) / sigma has a
standard deviation of about 1 (above 1: intervals too narrow).  A right model's check fails
about one seed in a thousand (the tests' family-wise rate).

Then the speed the issue names: the 7-dof arm with 10 parameters from a 20 s log (aim: under
60 s on 2 cores), printed with the measured time.

    python benchmarks/identify_coverage.py [--seeds 40] [--robots panda,acrobot,...] [--speed-only]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the hidden truths live with the tests

from crossdyn.experiments.core.identify.check_model import check_model  # noqa: E402
from crossdyn.experiments.core.identify.fit import Problem, fit  # noqa: E402
from crossdyn.experiments.core.identify.logs import load_log
from crossdyn.experiments.core.identify.spec import parse_fit  # noqa: E402
from identify_truth import ARM, TRUTH, arm_log  # noqa: E402
from identify_zoo import CASES, Case, log, robot_mjcf  # noqa: E402

# The 7-dof arm's ten parameters for the speed figure: its seven links' masses, two dampings, the delay.
SPEED_FIT = [f"body:link{i}:mass" for i in range(1, 8)] + ["joint:joint2:damping", "joint:joint4:damping", "delay"]
SPEED_AIM = 60.0  # s, on 2 cores


def _arm_case() -> Case:
    """tests/identify_truth.py's arm as a case (its own logger; see there)."""
    def unused(model: mujoco.MjModel, start: str):  # the arm logs itself (arm_log)
        raise NotImplementedError

    return Case("arm", dict(TRUTH), duration=4.0, window=0.5, noise={"qpos:*": 5e-4}, signals=["qpos:*"],
                controller=unused, start="")


def _fit(case: Case, path: Path, mjcf: Path, threads: int):
    model = mujoco.MjModel.from_xml_path(str(mjcf))
    spec = mujoco.MjSpec.from_file(str(mjcf))
    problem = Problem(spec, parse_fit(case.fits, model, spec, mjcf.name), [load_log(path, model)],
                      window=case.window, noise=case.noise_stated, threads=threads)
    try:
        return fit(problem)
    finally:
        problem.close()


def coverage(case: Case, seeds: int, threads: int, checks: bool) -> None:
    names = case.fits
    inside = dict.fromkeys(names, 0)
    unidentified = dict.fromkeys(names, 0)
    scores: dict[str, list[float]] = {name: [] for name in names}
    verdicts: dict[str, dict[str, int]] = {"truth": {}, "shipped": {}}
    started = time.perf_counter()
    mjcf = ARM if case.name == "arm" else case.path
    with tempfile.TemporaryDirectory() as folder:
        folder_path = Path(folder)
        robot = robot_mjcf(case, folder_path) if case.name != "arm" and checks else None
        for seed in range(seeds):
            path = folder_path / f"seed{seed}.csv"
            if case.name == "arm":
                arm_log(path, seed=seed, duration=case.duration)
            else:
                log(case, path, seed)
            result = _fit(case, path, mjcf, threads)
            row = []
            for k, target in enumerate(result.targets):
                truth = case.truth[target.spec]
                if not result.identified[k]:
                    unidentified[target.spec] += 1
                    row.append(f"{target.spec.split(':', 1)[-1]} n/i")
                    continue
                low, high = (float(v[0]) for v in result.bounds(k))
                hit = low <= truth <= high
                inside[target.spec] += hit
                sigma = (high - low) / 2 / 1.96
                scores[target.spec].append((float(result.value[k][0]) - truth) / sigma if sigma > 0 else 0.0)
                row.append(f"{target.spec.split(':', 1)[-1]} {'in ' if hit else 'OUT'}")
            if robot is not None:
                for label, model_path, detect in (("truth", robot, None),
                                                  ("shipped", case.path, {k: "20%" for k in case.truth})):
                    verdict = check_model(model_path, [path], window=case.window, noise=case.noise_stated,
                                          threads=threads, detect=detect, explain=False)
                    verdicts[label][verdict.verdict] = verdicts[label].get(verdict.verdict, 0) + 1
                    row.append(f"{label} {verdict.verdict}")
            print(f"  {case.name} seed {seed:2d} ({result.seconds:5.1f} s fit): " + ", ".join(row), flush=True)
    print(f"{case.name}: {seeds} seeds ({case.duration:g} s logs), {time.perf_counter() - started:.0f} s")
    for name in names:
        z = np.array(scores[name])
        spread = f"mean {z.mean():+.2f}, std {z.std(ddof=1):.2f}" if z.size > 1 else "n/a"
        counted = seeds - unidentified[name]
        print(f"  {name:32s} inside {inside[name]:2d}/{counted:2d} identified ({unidentified[name]} not identified); "
              f"(fitted - truth) / sigma: {spread} (honest: 0, 1)")
    if robot is not None:
        print(f"  check model: the truth's own MJCF {verdicts['truth']}, the model as shipped {verdicts['shipped']}")


def speed(threads: int) -> None:
    """The 7-dof arm (panda), 10 parameters, a 20 s log: the issue's 60 s on 2 cores."""
    case = dataclasses.replace(CASES["panda"], duration=20.0, fit=tuple(SPEED_FIT))
    with tempfile.TemporaryDirectory() as folder:
        path = log(case, Path(folder) / "panda20.csv", seed=0)
        started = time.perf_counter()
        result = _fit(case, path, case.path, threads)
        seconds = time.perf_counter() - started
    print(f"7-dof arm, {len(SPEED_FIT)} parameters, 20 s log, {threads} threads: {seconds:.1f} s "
          f"(aim {SPEED_AIM:g} s: {seconds / SPEED_AIM:.2f} x), {result.iterations} Jacobians")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--robots", default=",".join(["arm", *sorted(CASES)]),
                        help="comma-separated: arm and the zoo's " + ", ".join(sorted(CASES)))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-checks", action="store_true", help="intervals only, no check model verdicts")
    parser.add_argument("--speed-only", action="store_true")
    args = parser.parse_args()
    if not args.speed_only:
        for name in args.robots.split(","):
            coverage(_arm_case() if name == "arm" else CASES[name], args.seeds, args.threads, not args.no_checks)
    speed(args.threads)


if __name__ == "__main__":
    main()
