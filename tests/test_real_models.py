"""``check derivation`` on models as they come: passive effects, constraints, URDF.

The models in ``tests/models/`` carry damped and stiff joints, armature, a damped
tendon, gravity compensation (``passive_arm.xml``), contacts active at the sampled
states, a joint limit and an equality constraint (``contact_arm.xml``), and a URDF
arm with damping and friction (``urdf_arm.urdf``).  Their derivations are in
``tests/derivations/``: the RNEA of the rigid bodies, and the passive terms typed
out by hand from MuJoCo's formulas, so MuJoCo's own passive forces are a second
opinion on each.
"""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path

import mujoco
import numpy as np
import pytest

from crossdyn.experiments.core.checks import common as check_common
from crossdyn.experiments.core.checks import inverse_dynamics as id_check
from crossdyn.experiments.core.checks.common import load_derivation
from crossdyn.experiments.core.checks.derivation import check_derivation
from crossdyn.experiments.core.checks.report import off_entries
from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.truth import inverse_dynamics, truth_model

HERE = Path(__file__).parent
PASSIVE = HERE / "derivations" / "passive_arm.py"
REAL = HERE / "derivations" / "real_models.py"
MODELS = HERE / "models"
SAMPLES = 100  # the effects are 1e-3..30 N m against 1e-9 round-off: 100 states are plenty


@pytest.fixture(scope="module")
def passive():
    return load_model(MODELS / "passive_arm.xml")


@pytest.mark.parametrize("func, dynamics", [("rigid_body", "rigid-body"), ("as_modeled", "as-modeled")])
def test_correct_derivation_passes_in_its_mode(passive, func, dynamics):
    report = check_derivation(f"{PASSIVE}:{func}", passive, dynamics=dynamics, samples=SAMPLES, seed=1)
    assert report.passed, report.diagnosis
    assert report.dynamics == dynamics and report.explanation == []


@pytest.mark.parametrize(
    "func, blamed, effect, joints",
    [
        ("omits_damping", "velocity", "damping force b qd", ["joint 'shoulder' (0.4)", "joint 'elbow' (0.25)",
                                                              "joint 'reach' (3)", "tendon 'coupling' (0.3)"]),
        ("omits_armature", "mass_matrix", "armature", ["joint 'elbow' (0.02)", "joint 'wrist' (0.005)",
                                                       "joint 'reach' (0.1)"]),
    ],
)
def test_omitted_effect_is_named_as_modeled(passive, func, blamed, effect, joints):
    report = check_derivation(f"{PASSIVE}:{func}", passive, dynamics="as-modeled", samples=SAMPLES, seed=2)
    assert not report.passed and report.failing_terms == [blamed], report.diagnosis
    sentence, verdict = report.explanation
    assert effect in sentence and all(j in sentence for j in joints), sentence
    assert verdict.startswith(f"the derivation leaves out {func.removeprefix('omits_')}"), verdict


def test_rigid_body_derivation_fails_as_modeled_with_every_effect_named(passive):
    report = check_derivation(f"{PASSIVE}:rigid_body", passive, dynamics="as-modeled", samples=SAMPLES, seed=3)
    assert report.failing_terms == ["mass_matrix", "velocity", "gravity"]
    text = "\n".join(report.explanation)
    for phrase in ("armature (rotor inertia) of joint 'elbow' (0.02)", "damping force b qd of joint 'shoulder'",
                   "k (q - q_spring) of joint 'wrist' (1.5)", "gravity compensation of body 'fore' (0.6)"):
        assert phrase in text, text
    assert report.explanation[-1].endswith("--dynamics rigid-body agrees")
    # The mass-matrix offsets are minus the armature, on the diagonal only, constant.
    mean = np.array(report.terms["mass_matrix"].mean_error)
    # Round-off of O(1) kg m^2 entries.
    np.testing.assert_allclose(mean, -np.diag(passive.dof_armature), atol=1e-12)


def test_as_modeled_derivation_is_attributed_the_same_way_in_rigid_body(passive):
    report = check_derivation(f"{PASSIVE}:as_modeled", passive, samples=SAMPLES, seed=4)
    assert not report.passed and report.failing_terms == ["mass_matrix", "velocity", "gravity"]
    assert len(report.explanation) == 5  # one sentence per effect, then the verdict
    assert "armature (rotor inertia) of joint 'elbow'" in report.explanation[0]
    assert report.explanation[-1] == ("the derivation includes armature and damping and stiffness and gravcomp, "
                                      "which --dynamics rigid-body removes; --dynamics as-modeled agrees")


def test_a_different_fault_is_not_explained_away(passive):
    """Damping 10 % too high is not "the damping": the attribution must fit exactly or say nothing."""
    fn = load_derivation(f"{PASSIVE}:as_modeled")
    wrong = lambda q, qd, qdd: fn(q, qd, qdd) + 0.1 * np.asarray(passive.dof_damping) * qd  # noqa: E731
    report = check_derivation(wrong, passive, dynamics="as-modeled", samples=SAMPLES, seed=5)
    assert report.failing_terms == ["velocity"] and report.explanation == []


def test_truth_is_an_independent_sum_of_rigid_body_and_passive_forces(passive):
    """as-modeled truth - rigid-body truth = MuJoCo's own passive force and armature, computed on the original."""
    q, qd, qdd = check_common.sample_states(passive, 20, seed=6)
    diff = inverse_dynamics(truth_model(passive, "as-modeled"), q, qd, qdd) - inverse_dynamics(
        truth_model(passive, "rigid-body"), q, qd, qdd)
    data = mujoco.MjData(passive)
    expected = []
    for k in range(20):
        data.qpos[:], data.qvel[:] = q[k], qd[k]
        mujoco.mj_forward(passive, data)
        # qfrc_passive includes frictionloss? No: dry friction is a constraint in MuJoCo, not passive.
        expected.append(-data.qfrc_passive + passive.dof_armature * qdd[k])
    np.testing.assert_allclose(diff, np.array(expected), atol=1e-10)  # O(10) N m: round-off


def test_constraints_are_switched_off_and_counted():
    model = load_model(MODELS / "contact_arm.xml")
    report = check_derivation(f"{REAL}:contact_arm", model, samples=SAMPLES, seed=7)
    assert report.passed, report.diagnosis
    contacts = next(line for line in report.switched_off if line.startswith("contacts off"))
    found = re.fullmatch(r"contacts off: (\d+) rows were active at state (\d+) .*", contacts)
    rows, state = (int(n) for n in found.groups())
    # Independent count: every contact of condim 3 in a pyramidal cone is 4 rows.
    data = mujoco.MjData(model)
    data.qpos[:] = check_common.sample_states(model, SAMPLES, seed=7)[0][state]
    mujoco.mj_forward(model, data)
    assert rows == 4 * data.ncon > 0
    assert "equality 'couple' (joint) off: this checks the open tree" in report.switched_off
    assert "limits off: none was reached at the states checked" in report.switched_off


def test_a_reached_limit_is_named_with_its_state():
    model = load_model(MODELS / "contact_arm.xml")
    q = np.array([[0.0, 0.0, 0.0], [0.0, 1.5, 0.0]])  # elbow past its 1 rad limit in state 1
    report = check_derivation(f"{REAL}:contact_arm", model, states=(q, np.zeros((2, 3)), np.zeros((2, 3))))
    assert report.passed and "limits off: 1 row was active at state 1 (at 1 of 2 states)" in report.switched_off


def test_urdf_arm_as_mujoco_imports_it():
    model = load_model(MODELS / "urdf_arm.urdf")
    assert np.allclose(model.opt.gravity, [0.0, 0.0, -9.81])  # URDF has no gravity: MuJoCo's default -z
    assert model.body("base").id == 1  # fusestatic="false" in the <mujoco> extension keeps the fixed base
    for func, dynamics, passed in [("urdf_arm", "rigid-body", True), ("urdf_arm_damped", "as-modeled", True),
                                   ("urdf_arm", "as-modeled", False)]:
        report = check_derivation(f"{REAL}:{func}", model, dynamics=dynamics, samples=SAMPLES, seed=8)
        assert report.passed == passed, (func, dynamics, report.diagnosis)
    assert "damping force b qd of joint 'shoulder' (0.7), joint 'elbow' (0.3)" in report.explanation[0]
    assert {"element": "joint 'shoulder'", "in": {"damping": "0.7"},
            "out": {"frictionloss": "0.1", "limit": "[-2.5, 2.5]"}} in report.left_out


def test_cli_options_states_tolerances_and_full_matrices(passive, tmp_path, capsys):
    q, qd, qdd = check_common.sample_states(passive, 5, seed=9)
    states = tmp_path / "states.csv"
    np.savetxt(states, np.hstack([q, qd, qdd]), delimiter=",")
    base = ["check", "derivation", f"{PASSIVE}:omits_armature", "--mjcf", str(MODELS / "passive_arm.xml"),
            "--dynamics", "as-modeled", "--states", str(states), "--out", str(tmp_path)]
    assert main(base) == 1
    out = capsys.readouterr().out
    assert "M[1,1] off by -0.02, constant; M[2,2] off by -0.005, constant; M[3,3] off by -0.1, constant" in out
    metrics = json.loads((tmp_path / "check-derivation-passive_arm-omits_armature" / "metrics.json").read_text())
    assert metrics["samples"] == 5 and metrics["dynamics"] == "as-modeled"
    assert np.array(metrics["terms"]["mass_matrix"]["entry_max_abs"]).shape == (4, 4)
    assert np.array(metrics["terms"]["velocity"]["mean_error"]).shape == (4,)
    # The largest missing armature is 0.1 kg (reach) times |qdd| <= 50: atol 10 N m covers it.
    assert main(base + ["--atol", "10", "--rtol", "0"]) == 0
    capsys.readouterr()


def test_help_shows_tolerance_defaults_and_reason(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # argparse wraps (and hyphen-breaks) help at the terminal width
    with pytest.raises(SystemExit):
        main(["check", "derivation", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "default 1e-09: double-precision round-off" in text and "--dynamics" in text


def test_unknown_dynamics_is_refused(passive):
    with pytest.raises(ParameterError, match="unknown dynamics 'rigid'"):
        check_derivation(f"{PASSIVE}:rigid_body", passive, dynamics="rigid", samples=2)


def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_number_of_states(passive, monkeypatch):
    """Issue 15: states stream in chunks; peak memory at 16 chunks is that of 2 chunks."""
    for module in (id_check, check_common):  # states are drawn in common, given ones chunked in inverse_dynamics
        monkeypatch.setattr(module, "CHUNK", 64)
    monkeypatch.setattr(check_common, "PLOT_SAMPLES", 64)
    fn = load_derivation(f"{PASSIVE}:rigid_body")
    id_check.check(fn, passive, samples=64)  # warm-up: first-call allocations are not the states'
    small = _peak_bytes(lambda: id_check.check(fn, passive, samples=2 * 64))
    large = _peak_bytes(lambda: id_check.check(fn, passive, samples=16 * 64))
    # Held in memory all at once, 8x the states would be ~8x the peak; streamed, the
    # peak is one chunk's arrays plus fixed costs (measured: 1024 states held at once
    # peak at 5.9x 128 states; streamed, equal).  1.5x allows for allocator noise.
    assert large < 1.5 * small, (small, large)


def test_chunking_gives_the_states_sample_states_gives(passive, monkeypatch):
    monkeypatch.setattr(check_common, "CHUNK", 7)  # the states are drawn where the checks' helpers live
    chunks = list(check_common.state_chunks(passive, 20, seed=3))
    assert [c[0].shape[0] for c in chunks] == [7, 7, 6]
    whole_states = check_common.sample_states(passive, 20, seed=3)
    for got, whole in zip(zip(*chunks, strict=False), whole_states, strict=False):
        assert np.array_equal(np.concatenate(got), whole)


def test_fluid_forces_are_left_out_and_said_so(tmp_path):
    """Air drag (density, viscosity) is not compared: the rigid-body derivation still passes, and the report says so."""
    xml = (MODELS / "passive_arm.xml").read_text().replace(
        '<compiler angle="radian"/>', '<compiler angle="radian"/>\n  <option density="1.2" viscosity="0.1"/>')
    path = tmp_path / "windy_arm.xml"
    path.write_text(xml)
    model = load_model(path)
    q, qd, qdd = check_common.sample_states(model, 5, seed=12)
    raw = inverse_dynamics(model, q, qd, qdd) - inverse_dynamics(load_model(MODELS / "passive_arm.xml"), q, qd, qdd)
    assert np.abs(raw).max() > 1e-6  # the fluid force is really in MuJoCo's own mj_inverse
    report = check_derivation(f"{PASSIVE}:rigid_body", model, samples=SAMPLES, seed=12)
    assert report.passed, report.diagnosis
    assert "fluid forces left out (density 1.2, viscosity 0.1): they are never compared" in report.switched_off


def test_spring_about_qpos0_instead_of_springref_is_a_constant_gravity_offset(passive):
    """The spring pulls toward qpos_spring (springref 0.3 rad), not qpos0: k * 0.3 = 0.45 N m, constant, on g[wrist],
    and the report names it as the spring's reference (not a gravity error)."""
    fn = load_derivation(f"{PASSIVE}:as_modeled")
    k = np.asarray(passive.jnt_stiffness)[passive.dof_jntid]
    about_qpos0 = lambda q, qd, qdd: fn(q, qd, qdd) + k * np.asarray(passive.qpos_spring)  # noqa: E731
    report = check_derivation(about_qpos0, passive, dynamics="as-modeled", samples=SAMPLES, seed=13)
    assert report.failing_terms == ["gravity"]
    assert off_entries(report) == ["gravity: g[2] (wrist) off by 0.45, constant"]
    assert "k (springref - qpos0)" in report.explanation[0] and "joint 'wrist' (k 1.5, springref 0.3" in \
        report.explanation[0], report.explanation
    assert report.explanation[-1] == "write each spring force as -k (q - springref)"
    assert report.parameters == []  # explained by the spring: no inertial fit is attempted


def test_a_real_quadrupeds_wrong_base_mass_is_named_in_its_terms():
    """Unitree's Go2 as it comes (18 dofs, a free joint, armature, damping, friction on every joint).

    crossdyn's RNEA of the model's own tree agrees to round-off; the same RNEA with
    the base written as 7.5 kg is off in many entries of M, c and g, and the report
    names the one cause: the base's mass.
    """
    go2 = MODELS / "go2" / "go2.xml"
    right = check_derivation(f"{REAL}:go2", go2, samples=SAMPLES, seed=3)
    assert right.passed, right.diagnosis
    wrong = check_derivation(f"{REAL}:go2_heavy_base", go2, samples=SAMPLES, seed=3)
    assert not wrong.passed
    assert wrong.parameters == ["body 'base_link': mass 7.5 where the model has 6.921 (+0.579 kg); "
                                "everything else agrees"], wrong.parameters
