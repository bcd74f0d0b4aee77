"""``crossdyn tune EXPERIMENT --vary-from DIR/identified.json``: every run's model drawn within what the logs allow.

The robot is a cart-pole whose pole is 20 % heavier than its MJCF says and whose
cart rail has damping the MJCF lacks; its log (a cart position loop on noisy
encoders, the pole swinging below the rail) is identified, and the tune draws the
identified values into each run's copy of the MJCF.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import mujoco
import numpy as np
import pytest

from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.identify.logs import write_log
from crossdyn.experiments.core.identify.record import multisine, record
from crossdyn.experiments.core.models import model_path

TRUTH = {"body:pole:mass": 0.12, "joint:cart:damping": 0.5}  # kg (the MJCF: 0.1), N s/m (the MJCF: none)
DURATION = 3.0  # s: several pole swings, a fit of about two seconds


def _robot() -> mujoco.MjModel:
    spec = mujoco.MjSpec.from_file(str(model_path("cart_pole")))
    pole = spec.body("pole")
    pole.inertia = np.array(pole.inertia) * TRUTH["body:pole:mass"] / pole.mass  # the same rod, denser
    pole.mass = TRUTH["body:pole:mass"]
    damping = np.array(spec.joint("cart").damping)
    damping[0] = TRUTH["joint:cart:damping"]
    spec.joint("cart").damping = damping
    return spec.compile()


def _cart_pole_log(path: Path) -> Path:
    model = _robot()
    dt = model.opt.timestep
    t = np.arange(0.0, DURATION + dt / 2, dt)
    rng = np.random.default_rng(1)
    reference = multisine(t, 0.3, rng.uniform(0.2, 2.0, 5), rng.uniform(0, 2 * np.pi, 5))  # m

    def law(time: float, q: np.ndarray) -> np.ndarray:
        return np.array([20.0 * (reference[min(int(round(time / dt)), t.size - 1)] - q[0])])  # N: 20 N/m

    time, columns = record(model, lambda time, reading: law(time, reading.qpos), DURATION, noise={"qpos:*": 5e-4},
                           seed=0, signals=["qpos:cart", "qpos:pole"],
                           qpos=np.array([0.0, np.pi]))  # the pole hanging: stable without a balance law
    return write_log(path, time, columns)


def _main(args: list[str]) -> tuple[int, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(args)
    return code, printed.getvalue()


@pytest.fixture(scope="module")
def identified(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("vary-from")
    log = _cart_pole_log(folder / "robot.csv")
    code, _ = _main(["identify", "--mjcf", "cart_pole", "--log", str(log), "--fit", "body:pole:mass",
                     "--fit", "joint:cart:damping", "--out", str(folder / "identified")])
    assert code == 0
    return folder / "identified" / "identified.json"


def test_the_cart_pole_truth_lies_in_its_intervals(identified):
    for p in json.loads(identified.read_text())["parameters"]:
        assert p["identified"] and p["low"] <= TRUTH[p["name"]] <= p["high"], p


# A user's experiment that reports the model it was given: what each run's MJCF holds.
PROBE = '''
from crossdyn import Param, experiment
from crossdyn.experiments.core.models import load_model


@experiment("model-probe", summary="reports its model", expected="always",
            params={"mjcf": Param("cart_pole", "the model"), "x": Param(0.5, "unused", 0.0, 1.0)})
def probe(ctx):
    model = load_model(ctx.params["mjcf"])
    pole = model.body("pole")
    return {"passed": True, "measured": "read", "pole_mass": float(pole.mass[0]),
            "pole_inertia_per_mass": float(pole.inertia[0] / pole.mass[0]),
            "cart_damping": float(model.dof_damping[model.joint("cart").dofadr[0]])}
'''


def _rows(out: Path) -> list[dict]:
    with open(out / "samples.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_each_run_gets_its_draw_within_the_intervals(identified, tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    out = tmp_path / "tune"
    args = ["tune", "model-probe", "--from", str(probe), "--vary", "x=0:1", "--samples", "4", "--workers", "1",
            "--vary-from", str(identified), "--out", str(out), "--no-progress"]
    code, printed = _main(args)
    assert code == 0
    assert "drew body:pole:mass, joint:cart:damping uniformly within the identified intervals" in printed
    fitted = {p["name"]: p for p in json.loads(identified.read_text())["parameters"]}
    rows = _rows(out)
    assert len(rows) == 5
    nominal = mujoco.MjModel.from_xml_path(str(model_path("cart_pole"))).body("pole")
    for row in rows:
        mass, damping = float(row["body:pole:mass"]), float(row["joint:cart:damping"])
        # what the run's model held is what its row says it drew (the MJCF is written to 8 digits)
        assert float(row["pole_mass"]) == pytest.approx(mass, rel=1e-7)
        assert float(row["cart_damping"]) == pytest.approx(damping, rel=1e-7)
        # a heavier pole of the same shape, as identify fits it (round-off of the written digits)
        assert float(row["pole_inertia_per_mass"]) == pytest.approx(nominal.inertia[0] / nominal.mass[0], rel=1e-6)
        for name, value in (("body:pole:mass", mass), ("joint:cart:damping", damping)):
            p = fitted[name]
            if row["sample"] == "0":
                assert value == p["value"]  # the defaults run: the identified model itself
            else:
                assert p["low"] <= value <= p["high"] and value != p["value"], (name, row)
    assert len({row["body:pole:mass"] for row in rows}) == 5  # a new draw per run
    best = json.loads((out / "best.json").read_text())
    assert set(best["defaults"]["model"]) == {"body:pole:mass", "joint:cart:damping"}
    assert "body:pole:mass" not in best["defaults"]["metrics"]
    code, printed = _main(args)  # the same command resumes: the same draws, nothing run again
    assert code == 0 and "0 run in" in printed and _rows(out) == rows


def test_cart_pole_lqr_tuned_over_the_identified_models(identified, tmp_path):
    partly = json.loads(identified.read_text())
    damping = next(p for p in partly["parameters"] if p["name"] == "joint:cart:damping")
    damping.update(identified=False, low=None, high=None)
    source = tmp_path / "identified.json"
    source.write_text(json.dumps(partly))
    code, printed = _main(["tune", "cart-pole-lqr", "--vary", "r=0.05:0.5:log", "--samples", "1", "--short",
                           "--workers", "1", "--vary-from", str(source), "--out", str(tmp_path / "tune"),
                           "--no-progress"])
    assert code == 0
    assert "skipped joint:cart:damping: not identified by the logs, kept at the model's value" in printed
    rows = _rows(tmp_path / "tune")
    assert [row["outcome"] for row in rows] == ["pass", "pass"]
    assert "joint:cart:damping" not in rows[0] and "body:pole:mass" in rows[0]
