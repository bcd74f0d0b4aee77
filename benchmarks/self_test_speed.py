"""How long ``check model --self-test 100`` takes on the arm's 3 s log, against the 120 s aim on 2 cores.

The log is the identify arm's own (tests/identify_truth.py: a PD law tracking a multisine,
0.5 mrad encoders, 1 kHz); the check is the right model's.  Prints the wall time, its ratio to
the aim, and the counted rates, to set beside benchmarks/calibration.py's ``arm rate`` row
(the same log kind over 100 independent logs rather than 100 repeats of one).

    python benchmarks/self_test_speed.py [--runs 100] [--threads 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import mujoco

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the arm lives with the tests

from crossdyn.experiments.core.identify.check_model import check_model  # noqa: E402
from identify_truth import ARM, arm_log  # noqa: E402

AIM = 120.0  # s, on 2 cores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        log = arm_log(Path(folder) / "arm.csv", seed=0, duration=3.0, model=mujoco.MjModel.from_xml_path(str(ARM)),
                      delay=0.0)
        started = time.perf_counter()
        verdict = check_model(str(ARM), log, noise={"qpos:*": 5e-4}, self_test=args.runs, threads=args.threads,
                              explain=False)
        seconds = time.perf_counter() - started
    assert verdict.self_test is not None  # asked for: self_test=args.runs
    counted = verdict.self_test.as_json()
    print(f"check model --self-test {args.runs} on the arm's 3 s log, {args.threads} threads: {seconds:.1f} s "
          f"({seconds / AIM:.2f} x the {AIM:g} s aim); verdict {verdict.verdict}")
    print(f"false alarms {counted['false_alarms']} of {counted['runs']} (95 % interval "
          f"{100 * counted['interval'][0]:.1f} .. {100 * counted['interval'][1]:.1f} %)")
    for spec, p in counted["power"].items():
        print(f"  {spec}: caught {p['caught']} of {p['runs']} at {p['change']:.3g} {p['unit']} "
              f"(95 % interval {100 * p['interval'][0]:.0f} .. {100 * p['interval'][1]:.0f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
