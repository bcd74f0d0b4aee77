"""Every part of a hand derivation against MuJoCo: each check passes a right derivation, fails a wrong
one, and names what is wrong (tests/derivations/parts.py on the models of tests/models/).

Tolerances: the checks' defaults (1e-9 absolute and relative: round-off with four
orders of magnitude to spare; linearization 1e-6: central differences).  Sample
counts are small: every fault here is 1e-3..1e3 against 1e-12 round-off.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from crossdyn import (
    check_bias,
    check_derivation,
    check_energy,
    check_forward_dynamics,
    check_jacobian,
    check_kinematics,
    check_linearization,
    check_mass_matrix,
)
from crossdyn.experiments.core.cli import main

HERE = Path(__file__).parent
PARTS = HERE / "derivations" / "parts.py"
MODELS = HERE / "models"
FLOAT, URDF, ARM, BALL = (MODELS / n for n in ("floating_base.xml", "urdf_leg.urdf", "arm7.xml", "ball_chain.xml"))
N = 100  # states per check


sys.path.insert(0, str(PARTS.parent))
import parts  # noqa: E402  (tests/derivations/parts.py: the derivations, as functions too)


def fn(name: str) -> str:
    return f"{PARTS}:{name}"


# --- each command: right passes, wrong fails with the joint or entry named ----------------------------------


@pytest.mark.parametrize("model, site, body, right, wrong, named", [
    (FLOAT, "left_foot", None, "foot_pose", "foot_pose_transposed", "transpose"),
    (URDF, None, "foot", "urdf_foot_pose", "urdf_foot_pose_transposed", "transpose"),
    (BALL, "hand", None, "hand_pose", None, None),
])
def test_kinematics(model, site, body, right, wrong, named):
    report = check_kinematics(fn(right), model, site=site, body=body, samples=N)
    assert report.passed and set(report.parts) == {"position", "rotation"}, report.diagnosis
    if wrong:
        report = check_kinematics(fn(wrong), model, site=site, body=body, samples=N)
        assert not report.passed
        if named:
            assert named in " ".join(report.attribution), report.attribution


def test_kinematics_position_alone_and_the_point():
    report = check_kinematics(fn("foot_position"), FLOAT, site="left_foot", samples=N)
    assert report.passed and list(report.parts) == ["position"]
    report = check_kinematics(fn("foot_at_calf_origin"), FLOAT, site="left_foot", samples=N)
    assert report.failing_parts == ["position"]
    assert report.attribution == ["the position is the origin of body 'left_calf', not site 'left_foot'"]


def test_kinematics_rotation_transposed_is_named():
    report = check_kinematics(fn("foot_pose_transposed"), FLOAT, site="left_foot", samples=N)
    assert report.failing_parts == ["rotation"], report.diagnosis  # position vs rotation
    assert report.attribution[0].startswith("the rotation is the transpose of MuJoCo's")


@pytest.mark.parametrize("model, site, body, right, wrong, column", [
    (FLOAT, "left_foot", None, "foot_jacobian", "foot_jacobian_knee_flipped", "left_knee"),
    (URDF, None, "foot", "urdf_foot_jacobian", "urdf_foot_jacobian_ankle_flipped", "ankle"),
])
def test_jacobian_sign_names_the_column(model, site, body, right, wrong, column):
    assert check_jacobian(fn(right), model, site=site, body=body, samples=N).passed
    report = check_jacobian(fn(wrong), model, site=site, body=body, samples=N)
    assert not report.passed
    part = report.parts["jacobian"]
    off_columns = {part.labels[1][c] for c in np.flatnonzero(~part.entry_passed.all(axis=0))}
    assert off_columns == {column}
    assert report.attribution[0].startswith(f"column {column!r} has the opposite sign"), report.attribution


def test_jacobian_with_ball_joints():
    assert check_jacobian(fn("hand_jacobian"), BALL, site="hand", samples=N).passed


def test_jacobian_frame_is_named_and_local_passes_with_local():
    report = check_jacobian(fn("foot_jacobian_local"), FLOAT, site="left_foot", samples=N)
    assert not report.passed
    assert report.attribution[0].startswith("the whole Jacobian is in the local frame"), report.attribution
    assert "--frame local" in report.attribution[0]
    assert check_jacobian(fn("foot_jacobian_local"), FLOAT, site="left_foot", frame="local", samples=N).passed
    report = check_jacobian(fn("foot_jacobian"), FLOAT, site="left_foot", frame="local", samples=N)
    assert "world-aligned" in report.attribution[0]


def test_jacobian_point_is_named():
    report = check_jacobian(fn("foot_jacobian_at_calf_origin"), FLOAT, site="left_foot", samples=N)
    assert report.parts["jacobian"].labels[0] == ("linear x", "linear y", "linear z")  # (3, nv): linear only
    assert report.attribution == ["the linear rows are the Jacobian of the origin of body 'left_calf', not of site "
                                  "'left_foot': the point is wrong (the angular rows agree)"]


def test_jacobian_at_the_centre_of_mass_is_named():
    report = check_jacobian(fn("foot_jacobian_at_calf_com"), FLOAT, site="left_foot", samples=N)
    expected = ("the linear rows are the Jacobian of the centre of mass of body 'left_calf', not of site "
                "'left_foot': the point is wrong (the angular rows agree)")
    assert report.attribution == [expected], report.attribution


def test_report_text_lists_the_worst_error_by_part_under_its_heading():
    report = check_jacobian(fn("foot_jacobian_at_calf_com"), FLOAT, site="left_foot", samples=N)
    lines = report.text("foot").splitlines()
    heading = lines.index("  worst error by part:")
    assert lines[heading + 1].startswith("    jacobian: max |error| ") and heading > lines.index("  conventions:")


def test_jacobian_free_joint_convention_is_named():
    from crossdyn.analytic.rotation import quat_to_matrix

    def pinocchio(q):  # the free joint's linear velocity in the body frame
        J = parts.foot_jacobian(q).copy()
        J[..., 0:3] = J[..., 0:3] @ quat_to_matrix(q[..., 3:7])
        return J

    report = check_jacobian(pinocchio, FLOAT, site="left_foot", samples=N)
    assert "free joint 'root': your columns root.x..root.z take the linear velocity in the body frame" in \
        report.attribution[0]
    assert any("qvel[3:6] the angular velocity in the body frame" in c for c in report.conventions)


@pytest.mark.parametrize("model, right, wrong", [
    (FLOAT, "float_mass_matrix", "float_mass_matrix_heavy_trunk"),
    (URDF, "urdf_mass_matrix", "urdf_mass_matrix_long_shin"),
])
def test_mass_matrix(model, right, wrong):
    assert check_mass_matrix(fn(right), model, samples=N).passed
    report = check_mass_matrix(fn(wrong), model, samples=N)
    assert not report.passed and report.entries(), report.diagnosis


def test_mass_matrix_armature_on_the_diagonal():
    # A derivation with the armature: rigid-body truth removes it, as-modeled keeps it.
    report = check_mass_matrix(fn("arm_mass_matrix_with_armature"), ARM, samples=N)
    assert not report.passed
    assert report.attribution[0].startswith("the mass-matrix diagonal is off by exactly the armature")
    assert "joint 'j5' (0.02)" in report.attribution[0] and "--dynamics as-modeled agrees" in report.attribution[1]
    part = report.parts["mass matrix"]
    assert set(map(tuple, np.argwhere(~part.entry_passed))) == {(i, i) for i in range(7)}  # the diagonal only
    assert check_mass_matrix(fn("arm_mass_matrix_with_armature"), ARM, dynamics="as-modeled", samples=N).passed
    report = check_mass_matrix(fn("arm_mass_matrix"), ARM, dynamics="as-modeled", samples=N)
    assert report.attribution[-1] == "the derivation leaves out armature; --dynamics rigid-body agrees"


@pytest.mark.parametrize("model, right", [(FLOAT, "float_bias"), (URDF, "urdf_bias")])
def test_bias(model, right):
    assert check_bias(fn(right), model, samples=N).passed


def test_bias_gravity_sign_is_named():
    report = check_bias(fn("float_bias_gravity_flipped"), FLOAT, samples=N)
    assert not report.passed
    text = " ".join(report.attribution)
    assert "the velocity part b(q, qd) - b(q, 0) (Coriolis and centrifugal forces) agrees" in text
    assert "your gravity force has the opposite sign" in text


def test_bias_gravity_only():
    full = parts.float_bias
    report = check_bias(lambda q: full(q, np.zeros(q.shape[:-1] + (12,))), FLOAT, gravity_only=True, samples=N)
    assert report.passed and list(report.parts) == ["gravity"]


def test_bias_spring_about_qpos0_is_named_as_its_reference():
    k, damping = np.asarray(parts.ARM.jnt_stiffness), np.asarray(parts.ARM.dof_damping)
    base = parts.bias(parts.TREES["arm"])
    about_qpos0 = lambda q, qd: base(q, qd) + damping * qd + k * q  # noqa: E731
    report = check_bias(about_qpos0, ARM, dynamics="as-modeled", samples=N)
    assert report.attribution[0].startswith("the gravity term is off by exactly k (springref - qpos0)")
    assert "joint 'j7' (k 2, springref 0.4, qpos0 0: k (springref - qpos0) = 0.8)" in report.attribution[0]


def test_energy_potential_constant_passes_and_is_named():
    assert check_energy(fn("float_energy"), FLOAT, samples=N).passed
    report = check_energy(fn("float_energy_zero_at_base"), FLOAT, samples=N)
    mass = float(np.sum(parts.TREES["float"].mass))
    assert report.passed, report.diagnosis
    # Round-off of a ~100 J potential.
    assert abs(report.extra["potential_constant"] - mass * 9.81 * 0.45) < 1e-9
    assert f"yours = MuJoCo's {mass * 9.81 * 0.45:+.6g} J" in report.notes[0]


def test_energy_wrong_ones_are_named():
    report = check_energy(fn("float_energy_missing_half"), FLOAT, samples=N)
    assert report.failing_parts == ["kinetic"]
    assert report.attribution == ["your kinetic energy is 2 times MuJoCo's: the 1/2 of 1/2 qd^T M qd is missing"]
    report = check_energy(fn("urdf_energy_potential_flipped"), URDF, samples=N)
    assert report.failing_parts == ["potential"] and "opposite sign" in report.attribution[0]
    assert check_energy(fn("urdf_energy"), URDF, samples=N).passed


def test_forward_dynamics():
    assert check_forward_dynamics(fn("float_forward"), FLOAT, samples=N).passed
    assert check_forward_dynamics(fn("urdf_forward"), URDF, samples=N).passed
    report = check_forward_dynamics(fn("urdf_forward_no_coriolis"), URDF, samples=N)
    assert not report.passed
    assert "implies has its velocity terms" in report.attribution[0] and "mass matrix and gravity agree" in \
        report.attribution[0], report.attribution


def test_forward_dynamics_heavy_trunk_is_the_trunk_mass():
    report = check_forward_dynamics(fn("float_forward_heavy_trunk"), FLOAT, samples=N)
    assert "body 'trunk': mass 7.5 where the model has 6.921 (+0.579 kg); everything else agrees" in \
        report.attribution, report.attribution


def test_linearization():
    assert check_linearization(fn("arm_linearization"), ARM, keyframe="home").passed
    q = [0.2, -0.3, 0.02, 0.4]
    assert check_linearization(fn("urdf_linearization"), URDF, qpos=q).passed
    report = check_linearization(fn("urdf_linearization_stiffness_flipped"), URDF, qpos=q)
    assert report.failing_parts == ["A"]
    assert report.attribution[0].startswith("the dq/dq block (d qdd / d q: the gravity and spring stiffness) is off")


def test_linearization_gravity_sign_slip_and_gear_are_named():
    report = check_linearization(fn("arm_linearization_gravity_slip"), ARM, keyframe="home")
    assert report.failing_parts == ["A"]
    (sentence,) = report.attribution
    assert "dq/dq block" in sentence and "gravity-sign slip" in sentence and "d(j2_dot)/d(j2)" in sentence
    report = check_linearization(fn("arm_linearization_without_gear"), ARM, keyframe="home")
    assert report.failing_parts == ["B"]
    assert "input 'm7': your column is MuJoCo's divided by the actuator's gear 2" in report.attribution[-1]


def test_linearization_discrete_time_is_named():
    from crossdyn.experiments.core.linearize import linearize

    lin = linearize(str(ARM), keyframe="home")
    report = check_linearization(lambda q, qd, u: lin.discrete(), ARM, keyframe="home")
    assert report.attribution[0].startswith("your (A, B) is discrete time")


# --- the inertial-parameter rule on the floating base ----------------------------------------------------------


@pytest.mark.parametrize("fault, expected", [
    ("mass", "body 'trunk': mass 7.5 where the model has 6.921 (+0.579 kg); everything else agrees"),
    ("com", "body 'left_thigh': centre of mass [0.006, -0.02, -0.03] m where the model has [-0.004, -0.02, -0.03] "
            "([10, 0, 0] mm, body frame); everything else agrees"),
    ("inertia", "body 'trunk': inertia about the centre of mass Ixx 0.117 where the model has 0.107 kg m^2; "
                "everything else agrees"),
])
def test_derivation_names_the_inertial_parameter(fault, expected):
    report = check_derivation(parts.inverse_dynamics(parts.WRONG[fault]), FLOAT, samples=N)
    assert not report.passed and report.parameters == [expected], report.parameters


def test_derivation_with_a_wrong_link_length_names_the_length():
    """No mass, centre of mass or inertia explains it; the geometric slips are searched, and one does."""
    report = check_derivation(parts.inverse_dynamics(parts.WRONG["link_length"]), FLOAT, samples=N)
    assert not report.passed and report.parameters == [
        "body 'left_calf': pos 0 0 -0.23 where the model has 0 0 -0.21 (its origin 0.23 m from the origin of body "
        "'left_thigh', not 0.21 m: a link length); everything else agrees"], report.parameters


def test_mass_matrix_names_the_inertial_parameter():
    report = check_mass_matrix(fn("float_mass_matrix_heavy_trunk"), FLOAT, samples=N)
    assert report.attribution == ["body 'trunk': mass 7.5 where the model has 6.921 (+0.579 kg); everything else "
                                  "agrees"]
    # The shin written 0.03 m further down its slide: not a mass, centre of mass or inertia but a link length,
    # named with its value; a slide's zero moved along the same axis is the same error.
    report = check_mass_matrix(fn("urdf_mass_matrix_long_shin"), URDF, samples=N)
    assert report.attribution[0].startswith("body 'shin': pos 0 0 -0.33 where the model has 0 0 -0.3 "), \
        report.attribution
    assert report.attribution[1].startswith("(the same error is also joint 'shin_slide': ref -0.03 m")


# --- reports that read well -----------------------------------------------------------------------------------


def test_unnamed_joints_and_equalities_are_named_by_their_bodies(tmp_path, capsys):
    report = check_jacobian(fn("hand_jacobian"), BALL, site="hand", samples=10)
    assert report.parts["jacobian"].labels[1][-1] == "tail"  # the unnamed hinge of body 'tail'
    argv = ["check", "derivation", f"{PARTS}:float_inverse", "--mjcf", str(FLOAT), "--samples", "10",
            "--out", str(tmp_path)]
    assert main(argv) == 0
    from crossdyn.experiments.core.models import load_model
    from crossdyn.experiments.core.truth import ConstraintTally
    from crossdyn.experiments.core.truth_scope import switched_off

    model = load_model(BALL)
    assert "the equality between body 'tail' and body 'world' (connect) off: this checks the open tree" in \
        switched_off(model, ConstraintTally(model))


def test_frictionloss_on_many_joints_is_counted_not_listed():
    """A legged robot has dry friction on every joint: the sentence names three and counts the rest."""
    import mujoco

    from crossdyn.experiments.core.truth import ConstraintTally
    from crossdyn.experiments.core.truth_scope import switched_off

    links = "".join(f'<body pos="0 0 -0.1"><joint name="j{k}" axis="0 1 0" frictionloss="0.2"/>'
                    '<geom size="0.02" mass="1"/>' for k in range(12)) + "</body>" * 12
    model = mujoco.MjModel.from_xml_string(f"<mujoco><worldbody>{links}</worldbody></mujoco>")
    line = next(s for s in switched_off(model, ConstraintTally(model)) if s.startswith("frictionloss"))
    assert line.startswith("frictionloss left out on 12 elements (joint 'j0', joint 'j1', joint 'j2' and 9 more;")
    assert "'j3'" not in line


def test_a_one_state_function_is_said_once():
    report = check_kinematics(fn("foot_pose_one_state"), FLOAT, site="left_foot", samples=50)
    assert report.passed and len(report.notes) == 1
    # 50 states, plus the probe: two states one by one and one batch try.
    assert report.notes[0].startswith("parts.py:foot_pose_one_state takes one state at a time, so it was called "
                                      "53 times, state by state")


def test_mujoco_warnings_are_reported_as_the_models(tmp_path, capfd):
    """MuJoCo's own warnings while the check runs are captured into the report as the model's, not printed:
    contact_arm with a 6 KB arena runs out of constraint memory at states where its geoms touch the floor."""
    xml = (MODELS / "contact_arm.xml").read_text().replace('<compiler angle="radian"/>',
                                                           '<compiler angle="radian"/><size memory="6K"/>')
    (tmp_path / "small_arena.xml").write_text(xml)
    report = check_derivation(f"{HERE / 'derivations' / 'real_models.py'}:contact_arm", tmp_path / "small_arena.xml",
                              samples=50, seed=7)
    assert report.passed  # the truth switches constraints off: the arena only matters for the tally
    assert len(report.warnings) == 1, report.warnings
    assert report.warnings[0].startswith("MuJoCo: 'Insufficient arena memory for the number of constraints")
    assert report.warnings[0].endswith("raised by the model as it comes, not by your function")
    assert "Insufficient arena" not in capfd.readouterr().err  # not printed over the report


def test_derivation_diagnosis_is_one_line_and_groups_many_entries():
    report = check_derivation(parts.inverse_dynamics(parts.WRONG["mass"]), FLOAT, samples=N)
    assert "\n" not in report.diagnosis and "q =" not in report.diagnosis
    from crossdyn.experiments.core.checks.report import off_entries

    for line in off_entries(report):
        assert len(line) < 400, line  # grouped: the first entries, then the joints holding the rest


# --- the command line ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, code", [
    (["kinematics", "foot_pose", "--site", "left_foot"], 0),
    (["kinematics", "foot_pose_transposed", "--site", "left_foot"], 1),
    (["jacobian", "foot_jacobian_local", "--site", "left_foot", "--frame", "local"], 0),
    (["jacobian", "foot_jacobian_knee_flipped", "--site", "left_foot"], 1),
    (["mass-matrix", "float_mass_matrix"], 0),
    (["bias", "float_bias_gravity_flipped"], 1),
    (["energy", "float_energy_zero_at_base"], 0),
    (["forward-dynamics", "float_forward"], 0),
])
def test_cli_commands(argv, code, tmp_path, capsys):
    quantity, name, *rest = argv
    args = ["check", quantity, fn(name), "--mjcf", str(FLOAT), "--samples", "40", "--out", str(tmp_path), *rest]
    assert main(args) == code
    out = capsys.readouterr().out
    assert out.startswith("PASS" if code == 0 else "MISMATCH")
    folder = tmp_path / f"check-{quantity}-parts-{name}"
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["passed"] is (code == 0) and metrics["quantity"] == quantity and metrics["samples"] == 40
    assert (folder / "entry_errors.png").is_file()


def test_cli_linearization_states_junit_and_baselines(tmp_path, capsys):
    base = ["check", "linearization", fn("arm_linearization"), "--mjcf", str(ARM), "--keyframe", "home",
            "--out", str(tmp_path / "out")]
    assert main(base + ["--save-baseline", str(tmp_path / "base"), "--junit", str(tmp_path / "j.xml")]) == 0
    assert (tmp_path / "base" / "check-linearization-parts-arm_linearization.json").is_file()
    assert 'failures="0"' in (tmp_path / "j.xml").read_text()
    assert main(base + ["--baseline", str(tmp_path / "base")]) == 0
    assert "0 of 1 experiments drifted" in capsys.readouterr().out
    wrong = ["check", "linearization", fn("arm_linearization_gravity_slip"), "--mjcf", str(ARM), "--keyframe",
             "home", "--out", str(tmp_path / "out"), "--junit", str(tmp_path / "j2.xml")]
    assert main(wrong) == 1
    assert 'failures="1"' in (tmp_path / "j2.xml").read_text() and "gravity-sign slip" in capsys.readouterr().out


def test_cli_baseline_drift_exits_1(tmp_path, capsys):
    argv = ["check", "bias", fn("urdf_bias"), "--mjcf", str(URDF), "--samples", "20", "--out", str(tmp_path)]
    assert main(argv + ["--save-baseline", str(tmp_path / "base")]) == 0
    assert main(argv[:-2] + ["--out", str(tmp_path), "--samples", "21", "--baseline", str(tmp_path / "base")]) == 1
    assert "conditions differ" in capsys.readouterr().out  # 21 states are not the baseline's 20


def test_cli_states_files(tmp_path, capsys):
    from crossdyn.experiments.core.checks.common import sample_states
    from crossdyn.experiments.core.models import load_model

    model = load_model(FLOAT)
    q, qd, _ = sample_states(model, 7, seed=3)
    np.savetxt(tmp_path / "q.csv", q, delimiter=",")
    np.save(tmp_path / "qqd.npy", np.hstack([q, qd]))
    assert main(["check", "kinematics", fn("foot_pose"), "--mjcf", str(FLOAT), "--site", "left_foot", "--states",
                 str(tmp_path / "q.csv"), "--out", str(tmp_path)]) == 0
    assert main(["check", "bias", fn("float_bias"), "--mjcf", str(FLOAT), "--states", str(tmp_path / "qqd.npy"),
                 "--out", str(tmp_path)]) == 0
    metrics = json.loads((tmp_path / "check-bias-parts-float_bias" / "metrics.json").read_text())
    assert metrics["samples"] == 7 and metrics["seed"] is None


def test_cli_verbose_lists_everything(tmp_path, capsys):
    argv = ["check", "jacobian", fn("foot_jacobian_local"), "--mjcf", str(FLOAT), "--site", "left_foot",
            "--samples", "20", "--out", str(tmp_path)]
    assert main(argv) == 1
    short = capsys.readouterr().out
    assert main(argv + ["--verbose"]) == 1
    full = capsys.readouterr().out
    assert "more lines (all in metrics.json; --verbose)" in short and len(full) > len(short)


def test_module_function_spec(tmp_path, monkeypatch):
    (tmp_path / "my_robot_derivation.py").write_text(
        f"import sys\nsys.path.insert(0, {str(PARTS.parent)!r})\nfrom parts import foot_pose\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert check_kinematics("my_robot_derivation:foot_pose", FLOAT, site="left_foot", samples=10).passed


# --- the showcase experiment -----------------------------------------------------------------------------


def test_showcase_compute_judge_plot(tmp_path):
    """All seven checks on the two-link arm: right derivations pass, wrong ones are named; the judge can FAIL."""
    import dataclasses

    from crossdyn.experiments import showcase

    result = showcase.showcase_checks(samples=50, seed=1)
    verdict, metrics = showcase.judge_showcase(result)
    assert verdict.passed, metrics["checks"]
    assert set(metrics["checks"]) == {"kinematics", "jacobian", "mass-matrix", "bias", "energy", "forward-dynamics",
                                      "linearization"}
    assert "yours = MuJoCo's" in metrics["checks"]["energy"]["right_notes"][0]  # another zero of potential
    assert [p.name for p in showcase.plot_showcase(result, tmp_path)] == ["showcase.png"]
    # A wrong derivation that passed (here: the right one in its place) makes the experiment fail.
    swapped = dataclasses.replace(result, wrong={**result.wrong, "bias": result.right["bias"]})
    verdict, metrics = showcase.judge_showcase(swapped)
    assert not verdict.passed and verdict.measured.startswith("6 of 7")


def test_showcase_is_registered():
    from crossdyn.experiments.core.registry import get

    assert get("showcase").run.__module__ == "crossdyn.experiments.showcase"


def test_derivation_one_state_function_is_said_once():
    def one_state(q, qd, qdd):  # written for one state: a batch does not reshape to (nq,)
        return parts.float_inverse(np.reshape(q, 13), qd, qdd)

    report = check_derivation(one_state, FLOAT, samples=30)
    assert report.passed and len(report.notes) == 1
    assert report.notes[0].startswith("one_state takes one state at a time, so it was called"), report.notes


def test_cli_derivation_junit_and_baseline(tmp_path, capsys):
    """check derivation takes --junit and baselines too (the same machinery as the part checks)."""
    argv = ["check", "derivation", fn("float_inverse"), "--mjcf", str(FLOAT), "--samples", "20",
            "--out", str(tmp_path / "out"), "--junit", str(tmp_path / "j.xml")]
    assert main(argv + ["--save-baseline", str(tmp_path / "base")]) == 0
    assert (tmp_path / "base" / "check-derivation-parts-float_inverse.json").is_file()
    assert 'tests="1" failures="0"' in (tmp_path / "j.xml").read_text()
    assert main(argv + ["--baseline", str(tmp_path / "base")]) == 0
    assert "0 of 1 experiments drifted" in capsys.readouterr().out
