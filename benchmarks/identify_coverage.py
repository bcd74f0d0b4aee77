"""Are identify's 95 % intervals honest?  The hidden-truth arm over many encoder-noise seeds.

For each seed a log of the robot of tests/identify_truth.py (link 2 +15 %, shoulder
damping x3, elbow friction, gear -8 %, 4 ms delay, 0.5 mrad encoder noise) is
fitted, and each parameter's truth is checked against its interval.  Honest 95 %
intervals hold the truth in about 19 of 20 seeds (a binomial count: 17 or more of
20 is within the 95 % range of an honest interval's count).  It also prints each parameter's standardized
error (fitted - truth) / sigma over the seeds: mean 0 and standard deviation 1 when
the intervals are honest, a standard deviation above 1 when they are too narrow.

Measured (40 seeds): mass 39/40 (std 0.91), damping 40/40 (0.65), friction 37/40
(1.14), gear 40/40 (0.78), delay 39/40 (0.75); see docs/guides/identify.md.

    python benchmarks/identify_coverage.py [--seeds 20] [--duration 4] [--threads 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the hidden truth lives with the tests

from crossdyn.experiments.core.identify.fit import Problem, fit  # noqa: E402
from crossdyn.experiments.core.identify.logs import load_log  # noqa: E402
from crossdyn.experiments.core.identify.spec import parse_fit  # noqa: E402
from identify_truth import ARM, FIT, TRUTH, arm_log  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--duration", type=float, default=4.0, help="seconds per log")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    inside = {name: 0 for name in TRUTH}
    scores: dict[str, list[float]] = {name: [] for name in TRUTH}  # (fitted - truth) / the interval's sigma
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(args.seeds):
            path = arm_log(Path(folder) / f"seed{seed}.csv", seed=seed, duration=args.duration)
            model = mujoco.MjModel.from_xml_path(str(ARM))
            spec = mujoco.MjSpec.from_file(str(ARM))
            targets = parse_fit(FIT, model, spec, ARM.name)
            problem = Problem(spec, targets, [load_log(path, model)], threads=args.threads)
            result = fit(problem)
            problem.close()
            row = []
            for target, value, half in zip(result.targets, result.value, result.half_width, strict=True):
                hit = abs(float(value[0]) - TRUTH[target.spec]) <= float(half[0])
                inside[target.spec] += hit
                scores[target.spec].append((float(value[0]) - TRUTH[target.spec]) / (float(half[0]) / 1.96))
                row.append(f"{target.spec.split(':')[-1]} {'in ' if hit else 'OUT'}")
            print(f"seed {seed:2d} ({result.seconds:5.1f} s): " + ", ".join(row), flush=True)
    print(f"\ncoverage over {args.seeds} seeds ({args.duration:g} s logs, {time.perf_counter() - started:.0f} s):")
    for name, count in inside.items():
        z = np.array(scores[name])
        print(f"  {name:32s} {count:2d}/{args.seeds} = {count / args.seeds:.0%} (95 % intervals); "
              f"(fitted - truth) / sigma: mean {z.mean():+.2f}, std {z.std(ddof=1):.2f} (honest: 0, 1)")


if __name__ == "__main__":
    main()
