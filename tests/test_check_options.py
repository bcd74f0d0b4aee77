"""One report type and one set of options for every check.

Every ``check_*`` (inverse dynamics included) returns the one
:class:`~crossdyn.experiments.core.checks.report.CheckReport`, printed by the one
renderer, and takes the options of one definition,
:class:`~crossdyn.experiments.core.checks.options.CheckOptions`: the same names,
the same defaults, an option a check does not take refused as Python refuses any
unknown keyword.  Sample counts are tiny: these tests are about the plumbing, the
checks' numbers are tested in test_checks.py and test_derivation.py.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import crossdyn
from crossdyn.experiments.core.checks import QUANTITIES
from crossdyn.experiments.core.checks.options import CheckOptions
from crossdyn.experiments.core.checks.report import CheckReport, text

HERE = Path(__file__).parent
PARTS = HERE / "derivations" / "parts.py"
URDF, ARM = HERE / "models" / "urdf_leg.urdf", HERE / "models" / "arm7.xml"
sys.path.insert(0, str(PARTS.parent))
import parts  # noqa: E402  (tests/derivations/parts.py)

CHECKS = {function: getattr(crossdyn, function) for _, function in QUANTITIES.values()}
CHECKS["check_derivation"] = crossdyn.check_derivation
# A right function of each quantity on the URDF leg, and the arguments each check needs besides.
RIGHT = {
    "check_kinematics": ("urdf_foot_pose", {"body": "foot"}),
    "check_jacobian": ("urdf_foot_jacobian", {"body": "foot"}),
    "check_mass_matrix": ("urdf_mass_matrix", {}),
    "check_bias": ("urdf_bias", {}),
    "check_energy": ("urdf_energy", {}),
    "check_forward_dynamics": ("urdf_forward", {}),
    "check_derivation": ("urdf_inverse", {}),
}


def _right(name: str):
    function, extra = RIGHT[name]
    return getattr(parts, function), extra


def test_the_front_door_has_one_report_class_and_one_options_class():
    assert crossdyn.CheckReport is CheckReport and not hasattr(crossdyn, "Report")  # one class, one name
    assert crossdyn.CheckOptions is CheckOptions


def test_the_options_are_documented_once_and_every_check_points_there():
    attributes = (CheckOptions.__doc__ or "").split("Attributes:")[1]
    documented = {name.strip() for line in re.findall(r"^      ([a-z_]+(?:, [a-z_]+)*):", attributes, re.M)
                  for name in line.split(",")}
    assert documented == {f.name for f in dataclasses.fields(CheckOptions)}, documented
    for name, check in CHECKS.items():
        assert "CheckOptions" in (check.__doc__ or ""), name
        assert "samples, seed:" not in (check.__doc__ or ""), f"{name} documents the shared options again"


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_every_check_takes_the_shared_options_and_returns_the_one_report(name):
    fn, extra = _right(name)
    report = CHECKS[name](fn, URDF, samples=3, seed=7, atol=1e-8, rtol=1e-8, q_range=1.0, slide_range=0.1, **extra)
    assert isinstance(report, CheckReport) and report.passed, report.diagnosis
    assert (report.samples, report.seed, report.atol, report.rtol) == (3, 7, 1e-8, 1e-8)
    assert report.ranges["q_range"] == [-1.0, 1.0] and report.ranges["slide_range"] == [-0.1, 0.1]
    assert report.text("t") == text(report, "t")  # one renderer
    assert report.text("t").splitlines()[:3] == ["PASS: t", f"  truth: {report.truth}", f"  {report.diagnosis}"]


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_an_option_a_check_does_not_take_is_refused_as_python_refuses_it(name):
    fn, extra = _right(name)
    with pytest.raises(TypeError, match=rf"{name}\(\) got an unexpected keyword argument 'sample'"):
        CHECKS[name](fn, URDF, sample=3, **extra)  # a typo: never silently the default 1000


def test_each_check_takes_the_ranges_of_its_functions_arguments_only():
    fn, extra = _right("check_jacobian")
    with pytest.raises(TypeError, match="'qd_range'"):
        CHECKS["check_jacobian"](fn, URDF, samples=2, qd_range=1.0, **extra)
    with pytest.raises(TypeError, match="'dynamics'"):
        CHECKS["check_kinematics"](_right("check_kinematics")[0], URDF, samples=2, dynamics="as-modeled", body="foot")
    fd, _ = _right("check_forward_dynamics")
    assert CHECKS["check_forward_dynamics"](fd, URDF, samples=2, qdd_range=5.0).ranges["qdd_range"] == [-5.0, 5.0]


def test_the_defaults_are_the_options_defaults():
    fn, _ = _right("check_mass_matrix")
    report = crossdyn.check_mass_matrix(fn, URDF, samples=2)
    defaults = CheckOptions()
    assert (report.seed, report.atol, report.rtol, report.dynamics) == (defaults.seed, defaults.atol, defaults.rtol,
                                                                      defaults.dynamics)
    assert report.sampling[0].startswith("2 random states, seed 0")


def test_a_linearization_takes_the_tolerance_with_its_own_defaults():
    from crossdyn.experiments.core.checks.linearization import ATOL, RTOL

    report = crossdyn.check_linearization(parts.arm_linearization, ARM, keyframe="home")
    assert report.passed and (report.atol, report.rtol) == (ATOL, RTOL) != (CheckOptions.atol, CheckOptions.rtol)
    with pytest.raises(TypeError, match="'samples'"):
        crossdyn.check_linearization(parts.arm_linearization, ARM, keyframe="home", samples=3)


def test_the_inverse_dynamics_report_is_the_same_type_with_its_terms_as_parts():
    fn, _ = _right("check_derivation")
    wrong = crossdyn.check_derivation(lambda q, qd, qdd: fn(q, qd, qdd) + 0.5 * qdd, URDF, samples=4)
    assert isinstance(wrong, CheckReport) and wrong.quantity == "inverse-dynamics"
    assert wrong.terms is wrong.parts and wrong.failing_terms == ["mass_matrix"] == wrong.failing_parts
    mean = np.asarray(wrong.terms["mass_matrix"].mean_error)
    nv = mean.shape[0]
    assert np.allclose(mean, 0.5 * np.eye(nv), atol=1e-12)  # round-off of the leg's torques, 1e-16 x their scale
    assert wrong.terms["mass_matrix"].spread < 1e-12 and "each off by 0.5, constant" in wrong.entries()[0]
    lines = wrong.text("arm").splitlines()
    assert lines[0] == "MISMATCH: arm" and "  joints whose torque is off:" in lines
    assert set(wrong.to_dict()) >= {"terms", "failing_terms", "per_joint", "worst_state", "left_out"}
