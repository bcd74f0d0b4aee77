"""``crossdyn check derivation``: a user's FILE.py:FUNC against mj_inverse, and its errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from crossdyn.experiments.core.checks.common import load_derivation
from crossdyn.experiments.core.checks.derivation import check_derivation
from crossdyn.experiments.core.checks.inverse_dynamics import check
from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.errors import DerivationError
from crossdyn.experiments.core.models import load_model, model_path
from crossdyn.experiments.two_link import FAULTS, faulty_two_link, two_link_params

USER = Path(__file__).parent / "derivations" / "two_link_user.py"
SAMPLES = "200"  # the faults are 1e-3..1 N m against 1e-9 round-off: 200 states are plenty


@pytest.fixture(scope="module")
def arm():
    return load_model("two_link_arm")


@pytest.mark.parametrize(
    "func,blamed",
    [("correct", None), ("correct_batch", None), ("lecture_no_link_inertia", "mass_matrix"),
     ("gravity_flipped", "gravity"), ("coriolis_dropped", "velocity")],
)
def test_checker_blames_the_right_term(arm, func, blamed):
    report = check_derivation(f"{USER}:{func}", arm, samples=200, seed=1)
    assert report.passed == (blamed is None), report.diagnosis
    assert report.failing_terms == ([] if blamed is None else [blamed]), report.diagnosis


def test_lecture_no_link_inertia_offset_is_the_missing_inertia(arm):
    params = two_link_params(arm)
    report = check_derivation(f"{USER}:lecture_no_link_inertia", arm, samples=200, seed=2)
    term = report.terms["mass_matrix"]
    assert term.worst_entry == (0, 0)
    # A constant offset: the mean error is -(I1 + I2) exactly, to round-off of ~1e-16.
    assert abs(term.mean_error[0][0] + params.i1 + params.i2) < 1e-12
    assert "M[0,0]" in report.diagnosis and "constant offset" in report.diagnosis


@pytest.mark.parametrize("fault", list(FAULTS))
def test_showcase_faults_match_the_user_file(arm, fault):
    # The registered experiment's derivations fail exactly like the user-file ones.
    report = check(faulty_two_link(fault, two_link_params(arm)), arm, samples=100, seed=3)
    blamed = FAULTS[fault][1]
    assert report.failing_terms == ([] if blamed is None else [blamed])


def test_cli_pass_and_mismatch_exit_codes(tmp_path, capsys):
    assert main(["check", "derivation", f"{USER}:correct", "--mjcf", "two_link_arm",
                 "--samples", SAMPLES, "--out", str(tmp_path)]) == 0
    assert "PASS" in capsys.readouterr().out
    assert main(["check", "derivation", f"{USER}:gravity_flipped", "--mjcf", "two_link_arm",
                 "--samples", SAMPLES, "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH" in out and "gravity off by" in out
    metrics = json.loads((tmp_path / "check-derivation-two_link_user-gravity_flipped" / "metrics.json").read_text())
    assert metrics["failing_terms"] == ["gravity"]
    assert (tmp_path / "check-derivation-two_link_user-gravity_flipped" / "term_errors.png").is_file()


def _armature_model(tmp_path: Path) -> str:
    """The two-link arm with armature on its joints, written next to a copy of common.xml."""
    source = model_path("two_link_arm")
    shutil.copy(source.parent / "common.xml", tmp_path / "common.xml")
    path = tmp_path / "armature_arm.xml"
    path.write_text(source.read_text().replace('armature="0"', 'armature="0.01"'))
    return str(path)


def test_armature_arm_is_checked_as_it_comes(tmp_path, capsys):
    """An arm with armature is no longer refused: rigid-body passes, as-modeled blames the armature."""
    mjcf = _armature_model(tmp_path)
    argv = ["check", "derivation", f"{USER}:correct", "--mjcf", mjcf, "--samples", "20", "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    assert "-armature 0.01" in capsys.readouterr().out
    assert main(argv + ["--dynamics", "as-modeled"]) == 1
    out = capsys.readouterr().out
    assert "M[0,0], M[1,1] each off by -0.01, constant" in out
    assert "armature (rotor inertia) of joint 'q1' (0.01), joint 'q2' (0.01)" in out
    assert "--dynamics rigid-body agrees" in out


@pytest.mark.parametrize(
    "target,mjcf,message",
    [
        ("{user}:missing", "two_link_arm", "has no function 'missing'"),
        ("{user}:wrong_shape", "two_link_arm", "returned shape (3,)"),
        ("{user}:raises", "two_link_arm", "raised ZeroDivisionError: the user's bug"),
        ("{user}:NOT_A_FUNCTION", "two_link_arm", "is a int, not a function"),
        ("{tmp}/nowhere.py:f", "two_link_arm", "no derivation file"),
        ("{user}", "two_link_arm", "expected FILE.py:FUNC"),
        ("{tmp}/broken.py:f", "two_link_arm", "failed to import: NameError"),
        ("{user}:correct", "{tmp}/no_model.xml", "no model file"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys, target, mjcf, message):
    (tmp_path / "broken.py").write_text("x = undefined_name\n")
    argv = ["check", "derivation", target.format(user=USER, tmp=tmp_path), "--mjcf", mjcf.format(tmp=tmp_path),
            "--samples", "20", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("crossdyn: error:") and err.count("\n") == 1, err
    assert message in err


def test_load_derivation_returns_the_function():
    fn = load_derivation(f"{USER}:correct")
    assert callable(fn) and fn.__name__ == "correct"
    with pytest.raises(DerivationError, match="no function 'nope'"):
        load_derivation(f"{USER}:nope")


def test_cli_floating_base_derivation(tmp_path, capsys):
    target = f"{USER.parent / 'tree_rnea.py'}:free_tree"
    argv = ["check", "derivation", target, "--mjcf", "free_tree", "--samples", SAMPLES, "--out", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # On a pass the per-joint table is left out (a big robot's report stays short), the free joint's
    # convention is stated; --verbose prints the table, a free joint's six dofs named one by one.
    assert "PASS" in out and "max |error|" not in out.split("\n", 3)[3] and "qvel[3:6]" in out
    assert main(argv + ["--verbose"]) == 0
    verbose = capsys.readouterr().out
    table = verbose.split("\n  worst torque error by joint:\n", 1)[1].splitlines()
    assert [line.split(":")[0].strip() for line in table[:6]] == ["root.x", "root.y", "root.z", "root.rx", "root.ry",
                                                                  "root.rz"]
    assert all("max |error|" in line for line in table[:6])
