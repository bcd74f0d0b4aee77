"""Your own robot: the MJCF contract, gains designed from the model, and the second robot in closed loop."""

from __future__ import annotations

import json

import numpy as np
import pytest

from crossdyn import mjcf
from crossdyn.controllers.biped.controller import HEIGHT_PD, SWING_PD
from crossdyn.experiments.biped.model import check_contract, contract_problems, nominal_params
from crossdyn.experiments.biped.scenarios import controller_for
from crossdyn.experiments.core.errors import ModelError
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.registry import get
from crossdyn.experiments.core.runner import run_experiments

LARGE = "wheel_legged_biped_large"
TEXT = mjcf.path("wheel_legged_biped").read_text()


def _variant(tmp_path, name: str, text: str) -> str:
    (tmp_path / "common.xml").write_text(mjcf.path("common").read_text())
    path = tmp_path / f"{name}.xml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("name", ["wheel_legged_biped", LARGE])
def test_built_in_robots_meet_the_contract(name):
    assert contract_problems(load_model(name)) == []


def test_every_breach_is_named_in_one_error(tmp_path):
    text = (TEXT.replace('<motor name="left_wheel" joint="left_wheel" ctrlrange="-6 6"/>', "")
            .replace('<connect name="left_closure" site1="left_rear_foot" site2="left_axle"/>', "")
            .replace('<default class="rear_hip">\n      <joint type="hinge" axis="0 -1 0"',
                     '<default class="rear_hip">\n      <joint type="hinge" axis="0 1 0"')
            .replace('<gyro name="imu_gyro" site="imu"/>', '<accelerometer name="imu_gyro" site="imu"/>'))
    model = load_model(_variant(tmp_path, "broken", text))
    problems = contract_problems(model)
    assert "missing actuator 'left_wheel'" in problems
    assert "missing equality 'left_closure'" in problems
    assert "joint 'left_rear_hip' must turn about -y" in problems
    assert any(p.startswith("sensor 'imu_gyro' has the wrong type") for p in problems)
    with pytest.raises(ModelError) as err:
        check_contract(model, "broken.xml")
    message = str(err.value)
    assert "\n" not in message and all(p in message for p in problems)


def test_gains_follow_the_robot():
    """Leg gains scale with the mass (and lever) they move; the LQR follows the model's parameters."""
    small, large = nominal_params(), nominal_params(LARGE)
    gs, gl = controller_for({}).gains, controller_for({"mjcf": LARGE}).gains
    mass_ratio = large.pendulum.M / small.pendulum.M
    assert gl.legs.kp_height / gs.legs.kp_height == pytest.approx(mass_ratio, rel=1e-12)
    assert gl.legs.kp_height == pytest.approx(large.pendulum.M * HEIGHT_PD[0], rel=1e-12)
    lever = (large.l2 / small.l2) ** 2
    assert gl.swing_kp / gs.swing_kp == pytest.approx(mass_ratio * lever, rel=1e-12)
    assert gl.swing_kp == pytest.approx(large.pendulum.M * large.l2**2 * SWING_PD[0], rel=1e-12)
    # The LQR's pitch gain is designed on the heavier, longer pendulum: a different design.
    assert not np.allclose(gl.schedule(0.4), gs.schedule(0.4), rtol=0.05)


# The closed loops the second robot must pass (the jump's outcome is reported, not required).
MUST_PASS = ["balance-recovery", "velocity-tracking", "turn", "height-change", "roll-leveling", "push-recovery",
             "lqr-cost"]


@pytest.mark.parametrize("name", MUST_PASS + ["jump"])
def test_second_robot_runs_every_closed_loop(tmp_path, name):
    [outcome] = run_experiments([get(name)], tmp_path, short=True, seed=0, overrides={"mjcf": LARGE})
    metrics = json.loads((tmp_path / name / "metrics.json").read_text())
    assert outcome.error is None, outcome.error
    assert metrics["params"]["mjcf"] == LARGE
    if name in MUST_PASS:
        assert metrics["passed"] is True, f"{name} on {LARGE}: {outcome.measured}"
    if name != "lqr-cost":  # every other closed loop reports the realistic preset beside the ideal robot
        assert {"passed", "measured", "estimator_error", "imperfections"} <= set(metrics["realistic"])
