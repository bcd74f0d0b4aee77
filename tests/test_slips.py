"""Every realistic slip named on public models, in the model's own names, one cause each.

dm_control's hopper and finger and Unitree's H1 with its pelvis fixed
(``tests/models/``, each with its licence), against the tree-walk derivations of
``tests/derivations/slips.py``: each right derivation passes, and each one-slip
variant fails with one sentence naming the element and its value.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from crossdyn.experiments.core.checks.bias import check_bias
from crossdyn.experiments.core.checks.derivation import check_derivation
from crossdyn.experiments.core.checks.energy import check_energy
from crossdyn.experiments.core.checks.jacobian import check_jacobian
from crossdyn.experiments.core.checks.kinematics import check_kinematics
from crossdyn.experiments.core.checks.linearization import check_linearization
from crossdyn.experiments.core.checks.mass_matrix import check_mass_matrix
from crossdyn.experiments.core.checks.report import Part, group_entries
from crossdyn.experiments.core.checks.slips import number, vector
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.reduction import Reduction

HERE = Path(__file__).parent
SLIPS = HERE / "derivations" / "slips.py"
MODELS = HERE / "models"
HOPPER = load_model(MODELS / "dm_control" / "hopper.xml")
FINGER = load_model(MODELS / "dm_control" / "finger.xml")
H1 = load_model(MODELS / "h1" / "h1.xml")
# Slips move entries by 1e-3..1 against round-off of 1e-12: 40 states are plenty to fail and to attribute.
N = 40
ELBOW = {"body": "left_elbow_link_ball_hand"}


def fn(name: str) -> str:
    return f"{SLIPS}:{name}"


def test_the_public_models_come_with_their_licences():
    for folder in ("dm_control", "h1"):
        assert (MODELS / folder / "LICENSE").read_text().strip()
    # H1 as kept here: the pelvis fixed (19 hinges), no meshes needed.
    assert (H1.nq, H1.nv, H1.nu, H1.nmesh) == (19, 19, 19, 0)
    assert (HOPPER.nv, FINGER.nv) == (7, 3)


@pytest.mark.parametrize("check, model, right, wrong, target, sentence", [
    (check_kinematics, HOPPER, "hopper_toe", "hopper_toe_knee_reversed", {"site": "touch_toe"},
     "joint 'knee' turns the other way: your angle is minus MuJoCo's (it turns about [0 1 0] in body 'calf')"),
    (check_kinematics, HOPPER, "hopper_toe", "hopper_toe_knee_tilted", {"site": "touch_toe"},
     "joint 'knee': axis [0 0.995 0.09983] where the model has [0 1 0]"),
    (check_kinematics, FINGER, "finger_touch", "finger_touch_without_ref", {"site": "touchtop"},
     "joint 'proximal': ref -1.5708 (-90 deg) left out"),
    (check_kinematics, H1, "h1_elbow", "h1_elbow_without_shoulder_quat", ELBOW,
     "body 'left_shoulder_pitch_link': its quat left out (the model turns it by 25 deg about [1 0 0] against "
     "its parent, quat 0.9763 0.2164 0 0)"),
    (check_jacobian, FINGER, "finger_jacobian", "finger_jacobian_transposed", {"site": "touchtop"},
     "your Jacobian is transposed: its row i is MuJoCo's column i (3 x 3"),
    (check_jacobian, H1, "h1_elbow_jacobian", "h1_elbow_jacobian_angular_in_body", ELBOW,
     "the angular rows are in the frame of body 'left_elbow_link_ball_hand' (the linear rows agree)"),
    (check_mass_matrix, HOPPER, "hopper_mass_matrix", "hopper_mass_matrix_short_thigh", {},
     "body 'calf': pos 0 0 -0.3 where the model has 0 0 -0.33 (its origin 0.3 m from the origin of body "
     "'thigh', not 0.33 m: a link length)"),
])
def test_each_slip_is_named_as_one_cause(check, model, right, wrong, target, sentence):
    assert check(fn(right), model, samples=N, seed=1, **target).passed
    report = check(fn(wrong), model, samples=N, seed=1, **target)
    assert not report.passed
    assert len(report.attribution) == 1, report.attribution  # one cause, nothing else offered
    assert report.attribution[0].startswith(sentence), report.attribution


def test_a_body_fixed_to_the_world_is_never_offered():
    # H1's pelvis is fixed: its parameters cannot change M, so it is no second explanation of a wrong knee mass.
    assert check_mass_matrix(fn("h1_mass_matrix"), H1, samples=6, seed=1).passed
    report = check_mass_matrix(fn("h1_mass_matrix_heavy_knee"), H1, samples=6, seed=1)
    assert report.attribution == ["body 'left_knee_link': mass 2 where the model has 1.721 (+0.279 kg); everything "
                                  "else agrees"]


def test_a_body_jacobians_truth_names_the_body_once():
    report = check_jacobian(fn("h1_elbow_jacobian"), H1, samples=4, **ELBOW)
    assert report.truth.startswith("the origin of body 'left_elbow_link_ball_hand': mj_jacBody"), report.truth


FINGER_JOINTS = Reduction(
    lift=np.eye(6)[:, [0, 1, 3, 4]], read=np.eye(6)[[0, 1, 3, 4]], inputs=np.eye(2),
    state_names=("proximal", "distal", "proximal_vel", "distal_vel"), input_names=("proximal", "distal"))


def test_damping_left_out_of_a_linearization_is_named_per_joint_from_one_state():
    point = {"qpos": FINGER.qpos0, "reduction": FINGER_JOINTS}
    assert check_linearization(fn("finger_linearization"), FINGER, **point).passed
    report = check_linearization(fn("finger_linearization_undamped"), FINGER, **point)
    assert report.attribution == [
        "joint 'proximal': damping 2.5, joint 'distal': damping 2.5 left out of A (dq/dqd block: d qdd / d qd = "
        "-M^-1 D); everything else agrees"]  # the spinner's damping (0.5) is outside the reduced A: not named
    lines = group_entries(report.parts["A"])
    assert lines and not any("state-dependent" in line or "constant" in line for line in lines), lines


def test_one_state_is_neither_constant_nor_state_dependent():
    ok = np.array([[True, False]])
    part = Part(name="A", symbol="A", labels=(("x",), ("a", "b")), passed=False, max_abs_error=0.5, scale=1.0,
                worst_entry=(0, 1), worst_sample=0, mean_error=np.array([[0.0, 0.5]]),
                entry_max_abs=np.array([[0.0, 0.5]]), entry_range=np.zeros((1, 2)), entry_passed=ok, states=1)
    assert group_entries(part) == ["column 'b': row x off by 0.5"]
    several = Part(**{**part.__dict__, "states": 5})
    assert group_entries(several) == ["column 'b': row x off by 0.5, constant"]


def test_round_off_prints_as_zero():
    assert number(-1.07692e-14) == "0" and number(0.33) == "0.33" and number(-1e-14, scale=1e-12) == "-1e-14"
    assert vector([0.0, -1.07692e-17, -0.33]) == "0 0 -0.33"


def test_an_effect_left_out_is_named_with_the_sign_of_the_off_entries():
    # The hopper's joints carry armature 0.2; a rigid-body matrix checked as-modeled is off by -0.2 on them.
    report = check_mass_matrix(fn("hopper_mass_matrix"), HOPPER, dynamics="as-modeled", samples=8)
    assert "column 'knee': row knee off by -0.2, constant" in report.entries()[2]
    assert report.attribution[0].startswith("the mass-matrix diagonal is off by exactly minus the armature (rotor "
                                            "inertia) of joint 'waist' (0.2)"), report.attribution


# --- round 3: the slips a fit does not reach, and every quantity that a slip changes --------------------------

# A figure printed as a cause that is round-off, not a number anyone wrote: 1e-10 and below.
_ROUND_OFF = re.compile(r"\de-(?:1\d|[2-9]\d)\b")


@pytest.mark.parametrize("check, model, right, wrong, target, sentence", [
    # The planar hopper's hinges all measured the other way: its rotation is the transpose too, but that is not it.
    (check_kinematics, HOPPER, "hopper_toe", "hopper_toe_hinges_reversed", {"site": "touch_toe"},
     "joints 'rooty', 'waist', 'hip', 'knee', 'ankle' all turn the other way: your angles are minus MuJoCo's"),
    # Half a turn is beyond a fit that starts from the model's quat.
    (check_jacobian, HOPPER, "hopper_toe_jacobian", "hopper_toe_jacobian_calf_turned", {"site": "touch_toe"},
     "body 'calf': quat 0 1 0 0 where the model has 1 0 0 0 (turned by a further 180 deg about [1 0 0]"),
    # Gravity sees the thigh's offset (it moves the leg's mass), and no body's inertia.
    (check_bias, HOPPER, "hopper_gravity", "hopper_gravity_without_thigh_offset", {"gravity_only": True},
     "body 'thigh': pos 0 0 0 where the model has 0 0 -0.2 (its origin 0 m from the origin of body 'pelvis', not "
     "0.2 m: a link length)"),
    # The proximal link's m |c|^2 dropped: its inertia about the centre of mass, less that; its mass is no cause
    # (M cannot see the mass of a link whose centre of mass its joint turns about alone).
    (check_mass_matrix, FINGER, "finger_mass_matrix", "finger_mass_matrix_parallel_axis_dropped", {},
     "body 'proximal': inertia about the centre of mass Iyy 0.000656 where the model has 0.003712 kg m^2"),
])
def test_every_slip_is_named_for_what_it_is(check, model, right, wrong, target, sentence):
    assert check(fn(right), model, samples=N, seed=1, **target).passed
    report = check(fn(wrong), model, samples=N, seed=1, **target)
    text = " ".join(report.attribution)
    assert not report.passed and report.attribution[0].startswith(sentence), report.attribution
    assert "transpose" not in text and "inertia" not in text.replace(sentence, "")  # nothing it cannot be
    assert not _ROUND_OFF.search(text), text  # no round-off offered as a figure


def _tree_with(model, field: str, body: str, change):
    """crossdyn's own rigid-body tree of ``model`` with ``change`` added to one body's ``field`` (a slip)."""
    import dataclasses

    from crossdyn.experiments.core.checks.tree import tree_from_model
    from crossdyn.experiments.core.truth import truth_model

    tree = tree_from_model(truth_model(model))
    array = getattr(tree, field).copy()
    array[model.body(body).id - 1] += change
    return dataclasses.replace(tree, **{field: array})


def test_a_link_length_is_named_by_the_bias_and_the_inverse_dynamics_checks():
    """crossdyn's own recursive Newton-Euler of the hopper with the calf's 0.33 m offset written 0.30 m."""
    from crossdyn.analytic.rnea import rnea

    short = _tree_with(HOPPER, "pos", "calf", [0.0, 0.0, 0.03])
    sentence = ("body 'calf': pos 0 0 -0.3 where the model has 0 0 -0.33 (its origin 0.3 m from the origin of body "
                "'thigh', not 0.33 m: a link length)")
    bias = check_bias(lambda q, qd: rnea(short, q, qd, np.zeros_like(qd)), HOPPER, samples=N, seed=1)
    assert bias.attribution[0].startswith(sentence), bias.attribution
    derivation = check_derivation(lambda q, qd, qdd: rnea(short, q, qd, qdd), HOPPER, samples=N, seed=1)
    assert derivation.parameters[0].startswith(sentence), derivation.parameters


def test_a_potential_that_agrees_is_never_named():
    """The finger has gravity off: its potential is 0 on both sides, and equal to minus itself; the kinetic
    energy's slip (the distal link's inertia) is what is named."""
    from crossdyn.analytic.kinematics import energy

    heavy = _tree_with(FINGER, "inertia", "distal", np.diag([0.0, 0.001, 0.0]))
    report = check_energy(lambda q, qd: energy(heavy, q, qd), FINGER, samples=N, seed=1)
    assert not report.passed and report.parts["potential"].passed
    assert report.attribution == ["body 'distal': inertia about the centre of mass Iyy 0.003433 where the model has "
                                  "0.002433 kg m^2; everything else agrees"], report.attribution
