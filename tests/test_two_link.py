"""Two-link arm: the four derivations of docs/derivations/two-link.md against MuJoCo and each other."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from crossdyn.analytic.two_link import VARIANTS, TwoLinkParams, lagrange, mass_matrix, newton_euler
from crossdyn.experiments.core.checks.common import sample_states
from crossdyn.experiments.core.checks.inverse_dynamics import check
from crossdyn.experiments.core.errors import ModelError
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.truth import inverse_dynamics
from crossdyn.experiments.two_link import ATOL, check_variant, trajectory, two_link_params
from support import assert_close

# Torques here are at most ~2 N m; double round-off is ~1e-15 N m, so the issue's
# 1e-10 N m leaves five orders of magnitude.
EXACT_ATOL = 1e-10
N_STATES = 10_000  # the count; 5 x 10k mj_inverse calls take ~0.5 s


@pytest.fixture(scope="module")
def arm():
    model = load_model("two_link_arm")
    return model, two_link_params(model)


@pytest.fixture(scope="module")
def point_arm():
    model = load_model("two_link_arm_point_mass")
    return model, two_link_params(model)


def test_params_read_from_model_are_the_documented_numbers(arm):
    _, p = arm
    # The MJCF carries the page docs/derivations/two-link.md's numbers verbatim; reading them back goes through
    # MuJoCo's float32-free compile and a rotation, so round-off only.
    expected = TwoLinkParams(0.3, 0.2, 0.0942478, 0.125664, 0.15, 0.10, 7.09215e-4, 4.22021e-4, 9.81)
    assert_close(list(p.__dict__.values()), list(expected.__dict__.values()), atol=1e-15, rtol=1e-12, what="params")


@pytest.mark.parametrize("variant", ["lagrange", "newton-euler"])
def test_exact_variants_match_mj_inverse(arm, variant):
    model, _ = arm
    report, _ = check_variant(variant, model, samples=N_STATES, seed=1)
    assert report.passed, report.diagnosis
    assert report.max_abs_error <= EXACT_ATOL


def test_point_mass_variant_matches_its_model(point_arm):
    model, _ = point_arm
    report, _ = check_variant("point-mass", model, samples=N_STATES, seed=2)
    assert report.passed, report.diagnosis


@pytest.mark.parametrize("variant,model_name", [("lagrange", "two_link_arm"), ("newton-euler", "two_link_arm"),
                                                ("point-mass", "two_link_arm_point_mass")])
def test_exact_variants_along_trajectory(variant, model_name):
    model = load_model(model_name)
    params = two_link_params(model)
    q, qd, qdd = trajectory(np.linspace(0.0, 5.0, 2001))
    assert_close(VARIANTS[variant](params, q, qd, qdd), inverse_dynamics(model, q, qd, qdd),
                 atol=EXACT_ATOL, what=f"{variant} along the trajectory")


def test_lecture_no_link_inertia_is_flagged_in_the_mass_matrix_only(arm):
    model, p = arm
    report, _ = check_variant("lecture-no-link-inertia", model, samples=N_STATES, seed=3)
    assert not report.passed
    assert report.failing_terms == ["mass_matrix"]
    assert report.terms["velocity"].max_abs_error <= EXACT_ATOL
    assert report.terms["gravity"].max_abs_error <= EXACT_ATOL
    # The offsets are the missing inertias exactly: sums of the same doubles, so
    # 1e-12 (the figure) is ~1e4 round-offs of 1e-3-sized entries.
    missing = [[p.i1 + p.i2, p.i2], [p.i2, p.i2]]
    assert_close(report.terms["mass_matrix"].mean_error, -np.array(missing), atol=1e-12, what="M offsets")
    assert report.terms["mass_matrix"].spread <= 1e-15  # constant: no q dependence at all
    assert "mass matrix off by up to 1.131e-03 on entry M[0,0]" in report.diagnosis


def test_the_lectures_matrix_form_is_flagged_in_joint_2_velocity_terms(arm):
    model, p = arm
    report, _ = check_variant("lecture-matrix-form", model, samples=500, seed=9)
    assert report.failing_terms == ["velocity"]
    assert report.terms["velocity"].worst_entry == (1,)  # joint 2
    # Independent of MuJoCo: the printed form differs from the closed form by h qd1^2 on joint 2.
    q, qd, qdd = sample_states(model, 50, seed=10)
    h = p.m2 * p.l1 * p.p2 * np.sin(q[:, 1])
    diff = VARIANTS["lecture-matrix-form"](p, q, qd, qdd) - lagrange(p, q, qd, qdd)
    # Torques <= ~1 N m: round-off.
    assert_close(diff, np.stack([np.zeros(50), -h * qd[:, 0] ** 2], -1), atol=1e-14, what="printed - closed form")


def test_point_mass_on_the_cylinder_arm_is_a_real_mismatch(arm):
    model, _ = arm
    report, _ = check_variant("point-mass", model, samples=200, seed=4)
    assert set(report.failing_terms) == {"mass_matrix", "velocity", "gravity"}


def test_newton_euler_equals_closed_form_for_other_parameters():
    """The recursion and the closed form are independent derivations: they must
    agree for any parameters, not only the shipped ones (no MuJoCo involved)."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        p = TwoLinkParams(*rng.uniform(0.05, 2.0, 8), g=rng.uniform(0.0, 20.0))
        q, qd, qdd = rng.uniform(-np.pi, np.pi, (3, 50, 2))
        # Torques up to ~1e3 N m here; round-off 1e-16 relative.
        assert_close(newton_euler(p, q, qd, qdd), lagrange(p, q, qd, qdd), atol=1e-12, rtol=1e-12,
                     what="NE vs Lagrange")


def test_variants_accept_single_states_and_batches(arm):
    _, p = arm
    q, qd, qdd = sample_states(load_model("two_link_arm"), 7, seed=6)
    for fn in VARIANTS.values():
        batch = fn(p, q, qd, qdd)
        assert batch.shape == (7, 2)
        # Same arithmetic on a row of the batch.
        assert_close(fn(p, q[3], qd[3], qdd[3]), batch[3], atol=1e-15, what="single vs batch")
    assert mass_matrix(p, q).shape == (7, 2, 2)


def test_variant_rejects_wrong_shape(arm):
    _, p = arm
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 2\)"):
        lagrange(p, np.zeros(3), np.zeros(3), np.zeros(3))


# A wrong derivation must fail, and in the right term.
def _wrong_gravity(p, q, qd, qdd):
    return lagrange(TwoLinkParams(**{**p.__dict__, "g": -p.g}), q, qd, qdd)


def _dropped_coriolis(p, q, qd, qdd):
    tau = lagrange(p, q, qd, qdd)
    h = p.m2 * p.l1 * p.p2 * np.sin(q[..., 1])
    return tau + np.stack([2 * h * qd[..., 0] * qd[..., 1], np.zeros_like(h)], axis=-1)


@pytest.mark.parametrize("wrong,term", [(_wrong_gravity, "gravity"), (_dropped_coriolis, "velocity")])
def test_checker_fails_and_attributes_a_wrong_derivation(arm, wrong, term):
    model, p = arm
    report = check(functools.partial(wrong, p), model, samples=300, seed=7, atol=ATOL, rtol=0.0)
    assert not report.passed
    assert report.failing_terms == [term]


USER_ARM = """
<mujoco model="user_arm">
  <option gravity="0 -9.81 0"/>
  <worldbody>
    <body name="upper">
      <joint name="shoulder" type="hinge" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 0 -0.45 0" size="0.02" contype="0" conaffinity="0"/>
      <inertial pos="0 -0.2 0" mass="1.7" fullinertia="0.03 0.004 0.031 0 0 0"/>
      <body name="fore" pos="0 -0.45 0">
        <joint name="elbow" type="hinge" axis="0 0 1"/>
        <inertial pos="0 -0.13 0" mass="0.9" diaginertia="0.011 0.002 0.012"/>
        <site name="tip" pos="0 -0.35 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_users_own_arm_is_read_and_checked(tmp_path, capsys):
    """Another arm, written without the link-frame rotation and with other numbers."""
    from crossdyn.experiments.core.cli import main

    path = tmp_path / "user_arm.xml"
    path.write_text(USER_ARM)
    p = two_link_params(load_model(path))
    # Parsed from text and compiled: exact up to round-off.
    assert_close([p.l1, p.l2, p.m1, p.m2, p.p1, p.p2, p.i1, p.i2], [0.45, 0.35, 1.7, 0.9, 0.2, 0.13, 0.031, 0.012],
                 atol=1e-12, what="user arm params")
    assert main(["check", "two-link", "--mjcf", str(path), "--samples", "500", "--out", str(tmp_path)]) == 0
    assert main(["check", "two-link", "--variant", "lecture-no-link-inertia", "--mjcf", str(path), "--samples", "200",
                 "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "PASS" in out and "MISMATCH" in out and "mass matrix off by" in out


NOT_AN_ARM = {
    "three joints": ('<mujoco><worldbody><body><joint type="hinge" axis="0 0 1"/><geom size=".1"/>'
                     '<body><joint axis="0 0 1"/><geom size=".1"/><body><joint axis="0 0 1"/><geom size=".1"/>'
                     '</body></body></body></worldbody></mujoco>', "exactly 2 joints"),
    "gravity": (USER_ARM.replace('gravity="0 -9.81 0"', 'gravity="0 0 -9.81"'), "gravity must point along -y"),
    "axis": (USER_ARM.replace('name="elbow" type="hinge" axis="0 0 1"', 'name="elbow" type="hinge" axis="1 0 0"'),
             "axis"),
    "slide": (USER_ARM.replace('name="elbow" type="hinge"', 'name="elbow" type="slide"'), "hinge joints"),
    "zero pose": (USER_ARM.replace('fromto="0 0 0 0 -0.45 0"', 'fromto="0 0 0 0.45 0 0"')
                  .replace('pos="0 -0.45 0"', 'pos="0.45 0 0"'), "hang straight down"),
}


@pytest.mark.parametrize("case", sorted(NOT_AN_ARM))
def test_not_a_two_link_arm_is_named(tmp_path, case):
    xml, message = NOT_AN_ARM[case]
    path = tmp_path / "model.xml"
    path.write_text(xml)
    with pytest.raises(ModelError, match=message):
        two_link_params(load_model(path))


def test_every_violation_is_named_at_once(tmp_path):
    """An arm in another convention (gravity -z, elbow about x) hears of both, and of check derivation."""
    xml = NOT_AN_ARM["gravity"][0].replace('name="elbow" type="hinge" axis="0 0 1"',
                                           'name="elbow" type="hinge" axis="1 0 0"')
    path = tmp_path / "model.xml"
    path.write_text(xml)
    with pytest.raises(ModelError) as caught:
        two_link_params(load_model(path))
    message = str(caught.value)
    assert message.startswith("2 departures from the two-link convention "
                              "(see docs/derivations/two-link.md, 'Conventions'")
    assert "gravity must point along -y" in message and "'elbow' axis is [1.0, 0.0, 0.0]" in message
    assert "crossdyn check derivation FILE.py:FUNC" in message and "SPEC" not in message


def _cli_error(capsys, argv):
    from crossdyn.experiments.core.cli import main

    code = main(argv)
    err = capsys.readouterr().err.strip()
    return code, err


@pytest.mark.parametrize(
    "setup,expect",
    [
        ("missing", "no model file"),
        ("malformed", "cannot compile"),
        ("three", "exactly 2 joints"),
        ("nan", "non-finite"),
    ],
)
def test_bad_input_is_one_line_nonzero(tmp_path, capsys, setup, expect):
    argv = ["check", "two-link", "--samples", "5", "--out", str(tmp_path)]
    if setup == "missing":
        argv += ["--mjcf", str(tmp_path / "nope.xml")]
    elif setup == "malformed":
        (tmp_path / "bad.xml").write_text("<mujoco><worldbody>")
        argv += ["--mjcf", str(tmp_path / "bad.xml")]
    elif setup == "three":
        (tmp_path / "three.xml").write_text(NOT_AN_ARM["three joints"][0])
        argv += ["--mjcf", str(tmp_path / "three.xml")]
    else:
        (tmp_path / "states.csv").write_text("0.1,nan,0,0,0,0\n")
        argv += ["--states", str(tmp_path / "states.csv")]
    code, err = _cli_error(capsys, argv)
    assert code == 2
    assert len(err.splitlines()) == 1 and expect in err and "Traceback" not in err


def test_states_file_is_checked(tmp_path):
    from crossdyn.experiments.core.cli import main

    q, qd, qdd = sample_states(load_model("two_link_arm"), 20, seed=8)
    np.savetxt(tmp_path / "states.csv", np.hstack([q, qd, qdd]), delimiter=",")
    assert main(["check", "two-link", "--states", str(tmp_path / "states.csv"), "--out", str(tmp_path)]) == 0


def test_active_limit_is_switched_off_and_said_so(tmp_path):
    """A reached joint limit would put constraint forces into mj_inverse: the truth switches it off, the report
    says so."""
    limited = USER_ARM.replace('name="elbow" type="hinge" axis="0 0 1"',
                               'name="elbow" type="hinge" axis="0 0 1" range="-0.1 0.1"')
    path = tmp_path / "limited.xml"
    path.write_text(limited)
    model = load_model(path)
    params = two_link_params(model)
    states = (np.array([[0.3, 0.5]]), np.zeros((1, 2)), np.zeros((1, 2)))  # elbow past its limit
    report = check(functools.partial(VARIANTS["lagrange"], params), model, states=states)
    assert report.passed, report.diagnosis
    assert report.switched_off == ["limits off: 1 row was active at state 0 (at 1 of 1 states)"]
