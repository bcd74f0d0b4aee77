"""Does check model keep the rates it states?  False alarms and power counted over noise seeds, per log kind.

For each robot (the identify arm of tests/identify_truth.py and the zoo of tests/identify_zoo.py)
and each kind of log a user makes, over many noise seeds:

- **false alarms**: the right model (the MJCF that wrote the log) is checked against its own
  log; a ``fail`` is a false alarm.  The check states 0.1 % (family-wise).
- **power**: the check of that log states the smallest change of one parameter it catches
  (the case's first truth: the arm's link2 mass, the Panda's link5 mass, ...); a robot with
  that parameter changed by exactly that size is logged with the same seed and checked: a
  ``fail`` is a catch.  The stated size is where the test's expected z reaches its critical
  value: about 50 % power.
- **confident wrong**: the robot changed by twice the stated size (where the test's expected z is
  twice its critical value: a catch all but certain) and checked: a pass that states it could
  catch a change smaller than the one present is a confident wrong answer.  Must be 0.  (At the
  stated size itself half the checks pass by design, and their own stated sizes scatter about it.)

The log kinds:

- ``rate``: one sample per physics step (1 kHz on the arm), the case's duration and window;
- ``held``: the controller at half that rate holding each command, logged at its rate;
- ``0.5s``: a 0.5 s log in one 0.5 s window;
- ``one-window``: a 3 s log in one 3 s window;
- ``rest``: the robot held at its start (no excitation: a servo at its keyframe, a balance
  without its push, no torque);
- ``allowance``: the ``rate`` log with ``--tolerance 'qpos:*=<5 x the noise>'``.

Each rate is printed with its 95 % Clopper-Pearson interval.  Targets: false alarms at most
2 % in every row (0 of 20 where 20 seeds), power at the stated size at least 50 % (or its
interval holding 50 %), no confident wrong answer.

    python benchmarks/calibration.py [--seeds 100] [--robots arm,pendulum,...] [--kinds rate,held,...]
                                     [--workers 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import mujoco
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the robots live with the tests

from crossdyn.experiments.core.identify.check_model import check_model  # noqa: E402
from crossdyn.experiments.core.identify.logs import write_log  # noqa: E402
from crossdyn.experiments.core.identify.record import multisine, record  # noqa: E402
from crossdyn.experiments.core.identify.self_test import binomial_interval  # noqa: E402
from identify_truth import ARM, GAINS  # noqa: E402
from identify_zoo import CASES, Case  # noqa: E402

KINDS = ("rate", "held", "0.5s", "one-window", "rest", "allowance")
# Seeds per robot the issue asks for at least.
SEEDS = {"arm": 100, "pendulum": 40, "cartpole": 40, "acrobot": 20, "panda": 20, "a1": 20}


def _arm_controller(amplitude: float):
    def make(model: mujoco.MjModel, start: str):
        rng = np.random.default_rng(1)
        dt = model.opt.timestep
        t = np.arange(0.0, 10.0, dt)
        refs = np.stack([multisine(t, 0.8, rng.uniform(0.1, 1.5, 5), rng.uniform(0, 2 * np.pi, 5)) for _ in range(2)])

        def law(time: float, reading) -> np.ndarray:
            i = min(int(round(time / dt)), t.size - 1)
            return amplitude * GAINS * (refs[:, i] - reading.qpos[:2])
        return law
    return make


ARM_CASE = Case("arm", {"body:link2:mass": 0.4}, duration=3.0, window=0.5, noise={"qpos:*": 5e-4},
                signals=["qpos:shoulder", "qpos:elbow"], controller=_arm_controller(1.0), start="")


def _case(name: str) -> Case:
    return ARM_CASE if name == "arm" else CASES[name]


def _path(case: Case) -> Path:
    return ARM if case.name == "arm" else case.path


def _still(case: Case) -> Case:
    """The case with its excitation off: the robot held at its start."""
    if case.name == "arm":
        return dataclasses.replace(case, controller=_arm_controller(0.0))

    def held(model: mujoco.MjModel, start: str):
        key = model.key(start).id
        centre = model.key_qpos[key][model.jnt_qposadr[model.actuator_trnid[:, 0]]]
        servo = model.actuator_biastype[0] != 0  # a position servo holds its keyframe; a motor commands nothing
        if case.name in ("cartpole", "acrobot"):  # balance without the push: the regulator alone
            return _unpushed(model, start, case)
        return (lambda t, reading: centre.copy()) if servo else (lambda t, reading: np.zeros(model.nu))
    return dataclasses.replace(case, controller=held)


def _unpushed(model: mujoco.MjModel, start: str, case: Case):
    from crossdyn.experiments.core.regulator import regulator  # the zoo's balance design, without its push

    q, r = ([1, 100, 1, 1], 0.1) if case.name == "cartpole" else ([100, 100, 1, 1], 0.1)
    return regulator(model, q, r, keyframe=start, dt=model.opt.timestep)


def _robot(case: Case, change: tuple[str, float] | None) -> mujoco.MjModel:
    """The MJCF as shipped, or with one parameter changed by ``change = (name, size)`` (a mass scales its inertia)."""
    spec = mujoco.MjSpec.from_file(str(_path(case)))
    model = spec.compile()
    if change is None:
        return model
    name, size = change
    kind, element, attr = name.split(":")
    if kind == "body" and attr == "mass":
        b, body = model.body(element), spec.body(element)
        value = float(b.mass[0]) + size
        body.explicitinertial = True
        body.mass, body.inertia = value, np.array(b.inertia) * value / float(b.mass[0])
        body.ipos, body.iquat = np.array(b.ipos), np.array(b.iquat)
        body.fullinertia = np.full(6, np.nan)
    elif kind == "joint":
        joint = spec.joint(element)
        if attr == "damping":
            joint.damping = np.array([float(model.joint(element).damping[0]) + size, 0.0, 0.0])
        else:
            setattr(joint, attr, float(getattr(model.joint(element), attr)[0]) + size)
    return spec.compile()


def _log(case: Case, kind: str, robot: mujoco.MjModel, path: Path, seed: int) -> tuple[Path, float]:
    """A log of ``robot`` of this kind and its window."""
    shipped = mujoco.MjModel.from_xml_path(str(_path(case)))
    duration = {"0.5s": 0.5, "one-window": 3.0}.get(kind, case.duration)
    window = {"0.5s": 0.5, "one-window": 3.0}.get(kind, case.window)
    source = _still(case) if kind == "rest" else case
    qpos = shipped.key_qpos[shipped.key(case.start).id] if case.start else None
    law = source.controller(shipped, case.start)
    if kind == "held":
        every = 2
        memory: dict[str, np.ndarray | None] = {"u": None}
        dt = robot.opt.timestep

        def held(t: float, reading):
            if memory["u"] is None or int(round(t / dt)) % every == 0:
                memory["u"] = np.array(law(t, reading), float)
            return memory["u"]
        time_, columns = record(robot, held, duration, noise=case.noise, seed=seed, qpos=qpos, signals=case.signals,
                                resolution=case.resolution)
        return write_log(path, time_[::every], {k: v[::every] for k, v in columns.items()}), window
    time_, columns = record(robot, law, duration, noise=case.noise, seed=seed, qpos=qpos, signals=case.signals,
                            resolution=case.resolution)
    return write_log(path, time_, columns), window


def one_seed(job: tuple[str, str, int]) -> dict:
    """The right model's verdict on its log, and the changed robot's at the stated detectable size."""
    name, kind, seed = job
    case = _case(name)
    parameter = next(iter(case.truth))
    tolerance = [f"qpos:*={5 * next(iter(case.noise.values())):g}"] if kind == "allowance" else None
    with tempfile.TemporaryDirectory() as folder:
        try:
            path, window = _log(case, kind, _robot(case, None), Path(folder) / "right.csv", seed)
            right = check_model(str(_path(case)), path, window=window, noise=case.noise_stated, tolerance=tolerance,
                                threads=1, explain=False)
        except Exception as exc:  # noqa: BLE001 - a refused log is a row's outcome, not the benchmark's end
            return {"error": " ".join(str(exc).split())[:200]}
        stated = right.detectable.get(parameter)
        size = right.parameters[[s.quantity.spec for s in right.parameters].index(parameter)].detectable
        out = {"verdict": right.verdict, "stated": stated, "caught": None, "wrong": False}
        if not math.isfinite(size) or size <= 0:
            return out
        verdicts = {}
        for times in (1, 2):
            try:
                path, window = _log(case, kind, _robot(case, (parameter, times * size)), Path(folder) / "changed.csv",
                                    seed)
                verdicts[times] = check_model(str(_path(case)), path, window=window, noise=case.noise_stated,
                                              tolerance=tolerance, threads=1, explain=False)
            except Exception as exc:  # noqa: BLE001
                out["error"] = " ".join(str(exc).split())[:200]
                return out
        out["caught"] = verdicts[1].verdict == "fail"
        twice = verdicts[2]
        claimed = [s for s in twice.parameters if s.quantity.spec == parameter][0].detectable
        out["wrong"] = twice.verdict == "pass" and claimed < 2 * size
        return out


def _rate(k: int, n: int) -> str:
    if n == 0:
        return "-"
    low, high = binomial_interval(k, n)
    return f"{k}/{n} ({100 * low:.1f}-{100 * high:.1f} %)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None, help="seeds per row (default: the issue's per robot)")
    parser.add_argument("--robots", default="arm,pendulum,cartpole,acrobot,panda,a1")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    print(f"{'robot':9} {'log':11} {'false alarms (95 %)':24} {'caught at the stated size':26} {'wrong at 2x':>11} "
          f"{'refused':>7} {'s':>6}", flush=True)
    bad = 0
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for name in args.robots.split(","):
            for kind in args.kinds.split(","):
                seeds = args.seeds or SEEDS[name]
                started = time.perf_counter()
                rows = list(pool.map(one_seed, [(name, kind, s) for s in range(seeds)]))
                judged = [r for r in rows if "verdict" in r]
                alarms = sum(r["verdict"] == "fail" for r in judged)
                tried = [r for r in judged if r["caught"] is not None]
                caught = sum(bool(r["caught"]) for r in tried)
                wrong = sum(r["wrong"] for r in judged)
                refused = len(rows) - len(judged)
                print(f"{name:9} {kind:11} {_rate(alarms, len(judged)):24} {_rate(caught, len(tried)):26} "
                      f"{wrong:11d} {refused:7d} {time.perf_counter() - started:6.0f}", flush=True)
                low_alarm = binomial_interval(alarms, len(judged))[0] if judged else 0.0
                high_power = binomial_interval(caught, len(tried))[1] if tried else 1.0
                bad += int(low_alarm > 0.02 or high_power < 0.5 or wrong > 0)
    print(f"rows off target: {bad}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
