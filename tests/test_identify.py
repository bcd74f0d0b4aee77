"""crossdyn identify and check model on a hidden-truth arm (tests/identify_truth.py).

One identification of a 4 s log (module fixture, ~10 s on two cores) carries most
checks: every fitted parameter's truth inside its 95 % interval, the delay within
1 ms, the idle joint's damping "not identified", identified.xml differing from the
MJCF only in the fitted values and replaying the robot natively (its delay
included), and check model passing the right model and failing the nominal one.
The 20 s log's speed and the intervals' coverage over 20 noise seeds are measured
by benchmarks/identify_speed.py and benchmarks/identify_coverage.py.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import mujoco
import numpy as np
import pytest

from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.identify.check_model import replay
from crossdyn.experiments.core.identify.fit import START
from crossdyn.experiments.core.identify.logs import load_log
from identify_truth import ARM, FIT, TRUTH, arm_log, truth_model

DURATION = 4.0  # s: enough swings to pin five parameters, short enough for the suite


@pytest.fixture(scope="module")
def identified(tmp_path_factory):
    folder = tmp_path_factory.mktemp("identify")
    log = arm_log(folder / "robot.csv", seed=0, duration=DURATION)
    validate = arm_log(folder / "robot_validate.npz", seed=1, duration=1.0, excitation_seed=2)
    out = folder / "out"
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["identify", "--mjcf", str(ARM), "--log", str(log), "--validate", str(validate),
                     *[a for spec in FIT for a in ("--fit", spec)], "--fit", "joint:idle*:damping",
                     "--out", str(out)])
    assert code == 0
    return {"log": log, "out": out, "printed": printed.getvalue(),
            "json": json.loads((out / "identified.json").read_text())}


def test_every_parameter_recovered_inside_its_interval(identified):
    by_name = {p["name"]: p for p in identified["json"]["parameters"]}
    for name, truth in TRUTH.items():
        p = by_name[name]
        assert p["identified"], p
        assert p["low"] <= truth <= p["high"], (name, truth, p)
    assert abs(by_name["delay"]["value"] - TRUTH["delay"]) < 1e-3, by_name["delay"]  # the bound: 1 ms


def test_one_sentence_per_parameter(identified):
    lines = identified["printed"].splitlines()
    assert any(line.startswith("body 'link2': mass 0.4") and "kg where the model has 0.4 (+15 %)" in line
               for line in lines), lines
    assert any(line.startswith("actuator 'shoulder_motor': gear 0.9") and "(-8 %)" in line for line in lines), lines
    delay = ("commands: delay 3.9", "commands: delay 4.0")
    assert any(line.startswith(delay) and " ms where the model has 0" in line for line in lines), lines
    assert "joint 'idle_hinge': damping not identified (the logs never move it)" in lines
    idle = next(p for p in identified["json"]["parameters"] if p["name"] == "joint:idle_hinge:damping")
    assert idle == {**idle, "identified": False, "value": 0.005, "low": None, "high": None}


def test_residuals_fall_to_the_noise(identified):
    for signals in identified["json"]["residuals"].values():
        for key, r in signals.items():
            if key == START:  # the windows' starts' own misfit, not a reading
                continue
            assert r["before"] > 10, (key, r)  # the nominal model is tens of noise levels off
            assert r["after"] < 1.2, (key, r)  # the fitted one leaves the encoder noise (RMS 1 in its units)
    for signals in identified["json"]["validation"].values():
        for key, r in signals.items():
            assert r["after"] < 1.5 < 10 < r["before"], (key, r)  # a log not fitted: replayed as well


def test_identified_xml_changes_only_the_fitted_values(identified):
    before = ARM.read_text().splitlines()
    after = (identified["out"] / "identified.xml").read_text().splitlines()
    changed = [line for line in difflib.unified_diff(before, after, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    # shoulder damping, elbow friction, link 2's inertial, both motors (gear and/or delay): 5 lines each way
    assert len(changed) == 10, changed
    assert all("damping" in c or "frictionloss" in c or "inertial" in c or "motor" in c for c in changed), changed
    model = mujoco.MjModel.from_xml_path(str(identified["out"] / "identified.xml"))
    assert model.actuator_delay[0] > 0 and model.actuator_history[0, 0] > 0  # the delay is MuJoCo's own


def test_report_files(identified):
    out = identified["out"]
    assert (out / "index.html").read_text().count("<img") == 2  # the fitted log and the validation log
    assert len(list(out.glob("identify-*.png"))) == len(list(out.glob("validate-*.png"))) == 1


def test_check_model_passes_the_identified_model_and_fails_the_nominal(identified, tmp_path, capsys):
    """identified.xml replays the robot with MuJoCo's native delay; the MJCF as shipped does not."""
    code = main(["check", "model", "--mjcf", str(identified["out"] / "identified.xml"), "--log",
                 str(identified["log"]), "--out", str(tmp_path / "right")])
    first = capsys.readouterr().out
    assert code == 0 and first.startswith("the model reproduces robot.csv"), first
    code = main(["check", "model", "--mjcf", str(ARM), "--log", str(identified["log"]), "--out", str(tmp_path / "x")])
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith(("qpos:shoulder: the model does not reproduce", "qpos:elbow: the model does not reproduce"))
    assert "mrad" in out and "from t = " in out


def _truth_mjcf() -> mujoco.MjSpec:
    """The robot as an MJCF: the arm's spec with the truth values and MuJoCo's native command delay."""
    model = truth_model()
    spec = mujoco.MjSpec.from_file(str(ARM))
    spec.body("link2").mass = model.body("link2").mass[0]
    spec.body("link2").inertia = np.array(model.body("link2").inertia)
    spec.joint("shoulder").damping = np.array([TRUTH["joint:shoulder:damping"], 0, 0])
    spec.joint("elbow").frictionloss = TRUTH["joint:elbow:frictionloss"]
    spec.actuator("shoulder_motor").gear = np.array([TRUTH["actuator:shoulder_motor:gear"], 0, 0, 0, 0, 0])
    for actuator in spec.actuators:
        # RK4 reads a delayed command at the step's middle: half a step more than the logger's delay
        actuator.delay, actuator.nsample = TRUTH["delay"] + model.opt.timestep / 2, 8
        actuator.interp = 1  # linear
    return spec


@pytest.fixture(scope="module")
def own_log(tmp_path_factory):
    folder = tmp_path_factory.mktemp("own")
    (folder / "robot.xml").write_text(_truth_mjcf().to_xml())
    return folder / "robot.xml", arm_log(folder / "own.csv", seed=3, duration=1.0)


def test_a_model_passes_its_own_noisy_log(own_log):
    """The truth model against its own log (encoder noise, delay): within the noise; the nominal arm is not."""
    robot, log_path = own_log
    log = load_log(log_path, truth_model())
    assert replay(mujoco.MjSpec.from_file(str(robot)), [log], threads=1).passed
    assert not replay(mujoco.MjSpec.from_file(str(ARM)), [log], threads=1).passed


def test_assert_model_matches_log(own_log):
    from crossdyn.testing import assert_model_matches_log

    robot, log = own_log
    assert assert_model_matches_log(robot, log, threads=1).passed
    with pytest.raises(AssertionError, match=r"^qpos:(shoulder|elbow): the model does not reproduce own.csv"):
        assert_model_matches_log(ARM, [log], threads=1)


def test_register_model_check_registers_an_experiment_crossdyn_run_carries(own_log, tmp_path, capsys):
    robot, log = own_log
    source = tmp_path / "robot_checks.py"
    source.write_text("from crossdyn import register_model_check\n"
                      f"register_model_check('robot-is-its-mjcf', {str(robot)!r}, [{str(log)!r}])\n"
                      f"register_model_check('arm-is-the-robot', {str(ARM)!r}, [{str(log)!r}])\n")
    code = main(["run", "robot-is-its-mjcf", "arm-is-the-robot", "--from", str(source), "--out", str(tmp_path / "o"),
                 "--junit", str(tmp_path / "junit.xml")])
    capsys.readouterr()
    assert code == 1  # the second fails
    good = json.loads((tmp_path / "o" / "robot-is-its-mjcf" / "metrics.json").read_text())
    bad = json.loads((tmp_path / "o" / "arm-is-the-robot" / "metrics.json").read_text())
    assert good["passed"] and not bad["passed"] and bad["worst_rms"] > 10 > 2 > good["worst_rms"]
    assert "measured: worst qpos:" in (tmp_path / "junit.xml").read_text()


def test_excite_writes_commands_in_range_and_judges_parameters(tmp_path, capsys):
    """A limited elbow: the commands stay in ctrlrange, the simulated joint in its range; the idle joint is poor."""
    spec = mujoco.MjSpec.from_file(str(ARM))
    spec.joint("elbow").range = np.array([-6.0, 6.0])  # degrees (the arm's compiler angle): +-0.105 rad
    spec.joint("elbow").limited = 1
    spec.actuator("shoulder_motor").ctrlrange = np.array([-1.0, 1.0])
    spec.actuator("shoulder_motor").ctrllimited = 1
    model_path = tmp_path / "limited.xml"
    model_path.write_text(spec.to_xml())
    out = tmp_path / "cmd.csv"
    code = main(["excite", "--mjcf", str(model_path), "--duration", "2", "--out", str(out), "--fit",
                 "joint:*:damping"])
    printed = capsys.readouterr().out
    assert code == 0
    table = np.genfromtxt(out, delimiter=",", names=True)
    assert np.abs(table["ctrlshoulder_motor"]).max() <= 1.0
    assert "joint 'idle_hinge': damping poorly determined (this log would never move it)" in printed
    assert "joint 'shoulder': damping determined" in printed
    from crossdyn.experiments.core.identify.excite import _simulate

    model = mujoco.MjModel.from_xml_path(str(model_path))
    qpos = _simulate(model, table["time"], np.column_stack([table["ctrlshoulder_motor"], table["ctrlelbow_motor"]]))
    limit = model.jnt_range[1, 1] * 0.9  # the excitation keeps to 90 % of the range
    assert 0.3 * limit < np.abs(qpos[:, 1]).max() <= limit, np.abs(qpos[:, 1]).max()


FLOATING = ARM.parent / "identify_floating.xml"


def _floating_log(path: Path, seed: int, duration: float) -> Path:
    """The flying robot with its trunk 10 % heavier, leg joints swung by PD on noisy encoders.

    Logged: the commands, the six leg encoders (0.5 mrad), the trunk's pose from a state
    estimator (1 mm, 1e-3 in the quaternion's components) and the IMU (gyro 0.01 rad/s,
    accelerometer 0.05 m/s^2).
    """
    from crossdyn.experiments.core.identify.logs import write_log
    from crossdyn.experiments.core.identify.record import multisine

    spec = mujoco.MjSpec.from_file(str(FLOATING))
    trunk = mujoco.MjModel.from_xml_path(str(FLOATING)).body("trunk")
    spec.body("trunk").explicitinertial = True
    spec.body("trunk").mass = float(trunk.mass[0]) * 1.1
    spec.body("trunk").inertia = np.array(trunk.inertia) * 1.1
    spec.body("trunk").iquat, spec.body("trunk").ipos = np.array(trunk.iquat), np.array(trunk.ipos)
    spec.body("trunk").fullinertia = np.full(6, np.nan)
    model = spec.compile()
    rng, excitation = np.random.default_rng(seed), np.random.default_rng(7)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    n = int(round(duration / model.opt.timestep)) + 1
    times = np.arange(n) * model.opt.timestep
    refs = np.stack([multisine(times, 0.5, excitation.uniform(0.3, 2.0, 4), excitation.uniform(0, 6.3, 4))
                     for _ in range(model.nu)])
    legs = [model.joint(j).name for j in range(1, model.njnt)]
    rows: dict[str, list] = {k: [] for k in
                             [f"ctrl:{model.actuator(a).name}" for a in range(model.nu)] + [f"qpos:{j}" for j in legs]
                             + [f"qpos:root:{k}" for k in range(7)] + [f"sensor:imu_gyro:{k}" for k in range(3)]
                             + [f"sensor:imu_acc:{k}" for k in range(3)]}
    for i in range(n):
        encoders = data.qpos[7:] + 5e-4 * rng.standard_normal(6)
        for j, name in enumerate(legs):
            rows[f"qpos:{name}"].append(encoders[j])
        root = data.qpos[:7] + np.r_[1e-3 * rng.standard_normal(3), 1e-3 * rng.standard_normal(4)]
        for k in range(7):
            rows[f"qpos:root:{k}"].append(root[k])
        data.ctrl[:] = 20.0 * (refs[:, i] - encoders)
        for a in range(model.nu):
            rows[f"ctrl:{model.actuator(a).name}"].append(data.ctrl[a])
        mujoco.mj_step(model, data)  # the sensors read the state this step started from, with its command
        for k in range(3):
            rows[f"sensor:imu_gyro:{k}"].append(data.sensor("imu_gyro").data[k] + 0.01 * rng.standard_normal())
            rows[f"sensor:imu_acc:{k}"].append(data.sensor("imu_acc").data[k] + 0.05 * rng.standard_normal())
    return write_log(path, times, {k: np.array(v) for k, v in rows.items()})


def test_floating_base_mass_from_imu_and_joint_logs(tmp_path):
    """The trunk's mass of a flying two-legged robot, from its encoders, IMU and estimated pose."""
    from crossdyn.experiments.core.identify.fit import Problem, fit
    from crossdyn.experiments.core.identify.outputs import sentences
    from crossdyn.experiments.core.identify.spec import parse_fit

    path = _floating_log(tmp_path / "flying.csv", seed=0, duration=1.0)
    model = mujoco.MjModel.from_xml_path(str(FLOATING))
    spec = mujoco.MjSpec.from_file(str(FLOATING))
    problem = Problem(spec, parse_fit(["body:trunk:mass"], model, spec, FLOATING.name), [load_log(path, model)],
                      threads=1)
    result = fit(problem)
    problem.close()
    truth = 6.921 * 1.1
    value, half = float(result.value[0][0]), float(result.half_width[0][0])
    assert result.identified[0] and abs(value - truth) <= half, (value, half, truth)
    assert half < 0.02 * truth  # the IMU pins it to better than 2 %
    assert sentences(result)[0].startswith("body 'trunk': mass ") and "(+10 %)" in sentences(result)[0]


def test_identified_xml_keeps_includes_and_adds_a_missing_inertial(tmp_path):
    """An included file is copied beside identified.xml; a body whose mass came from its geoms gets an <inertial>."""
    from crossdyn.experiments.core.identify.fit import FitResult
    from crossdyn.experiments.core.identify.outputs import write_xml
    from crossdyn.experiments.core.identify.spec import parse_fit

    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "defaults.xml").write_text(
        '<mujoco><default><joint damping="0.1"/></default></mujoco>\n')
    (tmp_path / "robot.xml").write_text("""<mujoco model="r">
  <include file="parts/defaults.xml"/>
  <worldbody>
    <body name="link">
      <joint name="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" density="1000"/>
    </body>
  </worldbody>
  <actuator><motor name="m" joint="hinge" gear="2 0 0 0 0 0"/></actuator>
</mujoco>
""")
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "robot.xml"))
    spec = mujoco.MjSpec.from_file(str(tmp_path / "robot.xml"))
    targets = parse_fit(["body:link:mass", "joint:hinge:damping", "actuator:m:gear"], model, spec, "robot.xml")
    mass = float(model.body("link").mass[0])
    values = [np.array([mass * 1.2]), np.array([0.25]), np.array([1.8])]
    result = FitResult(targets, values, [np.array([1e-3])] * 3, [1.0] * 3, [True] * 3, {}, {}, 0.0, 0)
    out = write_xml(tmp_path / "robot.xml", result, model, tmp_path / "out")
    included = (tmp_path / "parts" / "defaults.xml").read_text()
    assert (tmp_path / "out" / "parts" / "defaults.xml").read_text() == included
    text = out.read_text()
    assert '<include file="parts/defaults.xml"/>' in text and 'gear="1.8 0 0 0 0 0"' in text
    assert '<joint name="hinge" axis="0 1 0" damping="0.25"/>' in text
    fitted = mujoco.MjModel.from_xml_path(str(out))
    assert fitted.body("link").mass[0] == pytest.approx(mass * 1.2, rel=1e-7)  # written with 8 digits
    assert fitted.body("link").inertia == pytest.approx(model.body("link").inertia * 1.2, rel=1e-6)
    assert fitted.dof_damping[0] == 0.25 and fitted.actuator_gear[0, 0] == 1.8
