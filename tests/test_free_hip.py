"""The free-hip model (issue 42): derived here, exact on the rod-leg biped, its misses named on the five-bar,
reductions users declare on a robot nobody here wrote, linearizations on the wheels that make or break no
contact, any gain schedule into a C header, and the team's controller in C on both bipeds."""

from __future__ import annotations

import dataclasses
import functools
import re
import subprocess
from pathlib import Path

import mujoco
import numpy as np
import pytest

from crossdyn.analytic.biped.free_hip import free_hip_accelerations, free_hip_linearization
from crossdyn.analytic.biped.wheeled_pendulum import linearize_pendulum
from crossdyn.controllers.lqr import GainSchedule, schedule
from crossdyn.experiments.biped import free_hip_control as control
from crossdyn.experiments.biped.free_hip import FIVE_BAR, ROD, free_hip_params, free_hip_reduction
from crossdyn.experiments.biped.model import STANCE, biped_params, stand_pose
from crossdyn.experiments.core.c_controller import compiler
from crossdyn.experiments.core.checks.forward_dynamics import check_forward_dynamics
from crossdyn.experiments.core.checks.linearization import check_linearization
from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.errors import ModelError, ParameterError
from crossdyn.experiments.core.linearize import linearize
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.reduction import Reduction
from support import assert_close

GO2W = Path(__file__).parent / "models" / "go2w" / "go2w.urdf"
LENGTHS = (0.22, 0.30, 0.42)  # m: crouched, mid-stroke, extended
# The free-hip model is exact on the rod legs; MuJoCo's soft wheel contacts (impratio 100) leave ~1e-7 of
# each entry and acceleration: 1e-6 relative, and 1e-6 of the largest for the model's zeros.
EXACT = 1e-6


@pytest.fixture(scope="module")
def rod() -> mujoco.MjModel:
    return load_model(ROD)


@pytest.fixture(scope="module")
def points(rod) -> dict:
    return {length: (free_hip_reduction(rod, length), free_hip_params(rod, length)) for length in LENGTHS}


def _accelerations(params):
    """The free-hip model as a user's forward dynamics in its own coordinates: ``fn(s, u) -> (theta, x, phi)_dd``
    (the operating point is upright at x = 0, so the reduction's state is the model's)."""
    def fn(s, u):
        return np.stack(free_hip_accelerations(params, s, u[..., 0], u[..., 1]), axis=-1)
    return fn


@pytest.mark.parametrize("length", LENGTHS)
def test_the_rod_legs_are_the_free_hip_model(rod, points, length):
    """Every entry of A and B, and the accelerations at random states near upright, to 1e-6 relative."""
    reduction, params = points[length]
    A, B = free_hip_linearization(params)
    d = reduction.declared
    lin = linearize(rod, qpos=d.qpos, qvel=d.qvel, ctrl=d.ctrl, reduction=reduction)
    assert lin.state_names == ("theta", "theta_dot", "x", "x_dot", "phi", "phi_dot") and lin.input_names == ("T", "Tp")
    scale = max(np.abs(A).max(), np.abs(B).max())
    assert_close(lin.A, A, atol=EXACT * scale, rtol=EXACT, what=f"A at l = {length} m")
    assert_close(lin.B, B, atol=EXACT * scale, rtol=EXACT, what=f"B at l = {length} m")
    # States within 0.05 rad (m) and 0.5 rad/s of upright, inputs within 1 N m; accelerations reach ~30 rad/s^2.
    report = check_forward_dynamics(_accelerations(params), rod, reduction=reduction, samples=12,
                                    seed=round(length * 100), atol=EXACT * 30.0, rtol=EXACT)
    assert report.passed, report.text("free-hip accelerations")


def test_a_slipped_sign_or_a_lumped_leg_fails(rod, points):
    reduction, params = points[0.30]
    slipped = dataclasses.replace(params, hip_to_body_com=-params.hip_to_body_com)
    report = check_linearization(lambda q, qd, u: free_hip_linearization(slipped), rod, reduction=reduction)
    assert not report.passed and "phi_dot" in report.diagnosis
    # The legs' mass lumped into the body (the massless-leg habit): wrong everywhere the legs swing.
    lumped = dataclasses.replace(params, body_mass=params.body_mass + 2 * params.leg_mass, leg_mass=0.0,
                                 leg_inertia=0.0)
    assert not check_linearization(lambda q, qd, u: free_hip_linearization(lumped), rod, reduction=reduction).passed
    forward = check_forward_dynamics(_accelerations(lumped), rod, reduction=reduction, samples=4, atol=1e-3, rtol=1e-3)
    assert not forward.passed and "theta_dd" in forward.diagnosis


def test_the_five_bar_misses_are_named_with_sizes_and_why():
    comparison = control.rod_comparison(load_model(FIVE_BAR), 0.30, FIVE_BAR)
    assert not comparison.report.passed
    misses = {m["entry"]: m for m in comparison.misses}
    # Couplings the rod model has at zero: the body's pitch on itself, and the wheel torque on the body's pitch.
    for entry, cause in (("A[phi_dot, phi]", "K"), ("B[phi_dot, T]", "E")):
        assert misses[entry]["rod"] == 0.0 and abs(misses[entry]["mujoco"]) > 1.0
        assert cause in misses[entry]["because"]
    reasons = " ".join(comparison.reasons)
    for word in ("inertia: M[", "gravity: K[", "K[phi, phi] 0.5", "input map: E[phi, T]", "front shank", "l1 = 0.1 m"):
        assert word in reasons, reasons
    # The rod robot at the same length misses nothing.
    assert control.rod_comparison(load_model(ROD), 0.30).misses == []


def _go2w() -> tuple[mujoco.MjModel, list[str]]:
    """Unitree's Go2-W as its URDF comes, on a floor, with motors on its wheels (what a URDF lacks)."""
    spec = mujoco.MjSpec.from_file(str(GO2W))
    spec.body("base").add_freejoint()  # MuJoCo roots a URDF in the world; on wheels it floats
    # The rolling model is rigid: the floor's contacts as stiff as MuJoCo allows, rolling 100 times stiffer.
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1], priority=1,
                            solref=[0.002, 1], solimp=[0.9999, 0.9999, 0.001, 0.5, 2])
    spec.option.impratio = 100
    wheels = [f"{leg}_foot_joint" for leg in ("FL", "FR", "RL", "RR")]
    for wheel in wheels:
        spec.add_actuator(name=wheel, target=wheel, trntype=mujoco.mjtTrn.mjTRN_JOINT)
    return spec.compile(), wheels


def test_a_users_own_reduction_on_a_robot_nobody_here_wrote():
    """Unitree's Go2-W on its four wheels, legs held: its forward roll x under the wheels' summed torque T."""
    model, wheels = _go2w()
    qpos = model.qpos0.copy()
    for leg in ("FL", "FR", "RL", "RR"):  # the stance of its published controller
        qpos[model.joint(f"{leg}_thigh_joint").qposadr[0]] = 0.8
        qpos[model.joint(f"{leg}_calf_joint").qposadr[0]] = -1.5
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    r = 0.086  # the wheels' radius, m (their collision cylinders)
    qpos[2] += r - min(data.xpos[model.body(f"{leg}_foot").id][2] for leg in ("FL", "FR", "RL", "RR")) - 1e-9
    legs = [model.joint(j).name for j in range(model.njnt) if not model.joint(j).name.endswith("foot_joint")
            and model.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE]

    # The declaration: a few lines.
    reduction = Reduction.from_coordinates(model, states={"x": lambda q: q[0]}, hold=legs, qpos=qpos, settle=True,
                                           inputs={"T": {w: 0.25 for w in wheels}})

    # The hand model: (M + 4 I / r^2) xdd = T / r, I each wheel's inertia about its axle.
    mass = float(model.body_subtreemass[model.body("base").id])
    inertia = float(model.body("FL_foot").inertia[0])  # its principal moment about the axle (0.0012 kg m^2)
    def rolling(wheel_inertia):
        return lambda q, qd, u: (np.array([[0.0, 1.0], [0.0, 0.0]]),
                                 np.array([[0.0], [1.0 / (r * (mass + 4 * wheel_inertia / r**2))]]))
    # The stiffest contacts MuJoCo has leave ~1e-6 of B; 1e-5 is a tenth of the wheels' inertia's share.
    right = check_linearization(rolling(inertia), model, reduction=reduction, atol=1e-8, rtol=1e-5)
    assert right.passed, right.text("Go2-W rolling")
    assert len(reduction.declared.contacts) == 8  # each wheel's cylinder rests on both rims
    slipped = check_linearization(rolling(0.0), model, reduction=reduction, atol=1e-8, rtol=1e-5)
    assert not slipped.passed and "B[x_dot, T]" in slipped.diagnosis


def test_the_biped_on_its_wheels_is_linearized_without_making_or_breaking_contacts():
    """The wheels stand 1e-9 m into the floor: a 1e-6 step lifts them out or pushes them twice as deep."""
    model = load_model(FIVE_BAR)
    qpos = stand_pose(model, STANCE)
    chosen = linearize(model, qpos=qpos)
    shallow = linearize(model, qpos=qpos, eps=1e-10)  # no step of 1e-10 m reaches through 1e-9 m
    # Round-off at a 1e-10 step is ~1e-16 |qacc| / 1e-10 of the scale; the linearize(eps=1e-9) agreed
    # to 0.1 %, the bar here.
    scale = np.abs(shallow.A).max()
    assert_close(chosen.A, shallow.A, atol=1e-3 * scale, rtol=1e-3, what="A on the wheels")
    assert chosen.steps.min() <= 1e-9 and chosen.steps.max() == 1e-6  # only the directions into the floor shrink

    # In the free-hip coordinates the lifts roll the wheels: no step makes or breaks a contact, and the
    # report says how little the answer moves with the step.
    reduction = free_hip_reduction(model, 0.30)
    A, B = free_hip_linearization(free_hip_params(model, 0.30))
    report = check_linearization(lambda q, qd, u: (A, B), model, reduction=reduction, atol=1.0, rtol=0.2)
    change = report.extra["finite_difference"]["largest_change_relative"]
    assert change < 1e-4 and any("finite-difference steps 1e-06" in note for note in report.notes)
    # A step forced long enough to sink or lift the wheels is caught: the answer depends on it.
    forced = check_linearization(lambda q, qd, u: (A, B), model, reduction=reduction, atol=1.0, rtol=0.2, eps=0.05)
    assert not forced.passed and "depends on the finite-difference step" in forced.attribution[0]


def _parse_floats(block: str) -> np.ndarray:
    return np.array([v.rstrip("f") for v in re.findall(r"-?[\d.]+(?:e[-+]?\d+)?f", block)], dtype=np.float32)


def test_gain_schedules_of_any_shape_go_into_a_c_header(rod, tmp_path):
    pendulum = biped_params(load_model(FIVE_BAR)).pendulum
    lengths = np.linspace(0.22, 0.42, 6)
    four = schedule(functools.partial(linearize_pendulum, pendulum), lengths, np.diag([20.0, 10.0, 100.0, 1.0]),
                    np.eye(1), state_names=("x", "xd", "theta", "thetad"), input_names=("T",))
    six = control.design(rod)
    for sched, name in ((four, "balance"), (six, "free_hip")):
        nu, nx = sched.coeffs.shape[1:]
        text = sched.to_c(tmp_path / f"{name}.h", name).read_text()
        assert f"#define {name.upper()}_INPUTS {nu}" in text and f"#define {name.upper()}_STATES {nx}" in text
        assert "x = [" + ", ".join(sched.state_names) + "]" in text
        coeffs = re.search(rf"{name}_coeffs\[.*?=\s*(.*?);", text, re.S).group(1)
        # Nine digits round-trip a float: the header's numbers are the fit's, rounded to float and nothing else.
        np.testing.assert_array_equal(_parse_floats(coeffs), sched.coeffs.astype(np.float32).ravel())
        # A C compiler takes it, and K(l) by Horner's rule in float is the schedule's to float's rounding.
        program = tmp_path / f"{name}.c"
        program.write_text(f'#include <stdio.h>\n#include "{name}.h"\nint main(void) {{ float l = 0.3f; '
                           f"for (int i = 0; i < {name.upper()}_INPUTS; ++i) for (int j = 0; j < "
                           f"{name.upper()}_STATES; ++j) {{ float k = {name}_coeffs[0][i][j]; for (int d = 1; d <= "
                           f"{name.upper()}_DEGREE; ++d) k = k * l + {name}_coeffs[d][i][j]; "
                           'printf("%.9g\\n", k); } return 0; }\n')
        exe = tmp_path / name
        subprocess.run([compiler(), "-std=c99", str(program), "-o", str(exe)], check=True, capture_output=True)
        printed = np.array(subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split(),
                           dtype=float)
        # Float Horner over coefficients of up to ~1e3 cancelling to ~10: ~1e-4 absolute of float rounding.
        assert_close(printed.reshape(nu, nx), sched(0.3), atol=1e-3, rtol=1e-4, what=f"{name} K(0.3) in C")
    with pytest.raises(ValueError, match="not a C identifier"):
        four.to_c(tmp_path / "x.h", "9lives")


def test_crossdyn_gains_writes_the_experiments_header(tmp_path, capsys):
    out = tmp_path / "gains" / "free_hip_gains.h"
    assert main(["gains", "--experiment", "biped-free-hip", "--out", str(out), "--set", "robot=rod"]) == 0
    assert "free_hip_coeffs[FREE_HIP_DEGREE + 1][FREE_HIP_INPUTS][FREE_HIP_STATES]" in out.read_text()
    assert "K (2, 6)" in capsys.readouterr().out
    for argv, message in ((["--experiment", "nope"], "no experiment 'nope'"),
                          (["--experiment", "two-link-lagrange"], "designs no gain schedule"),
                          (["--experiment", "biped-free-hip", "--name", "9x"], "not a C identifier"),
                          (["--experiment", "biped-free-hip", "--set", "robot=legs"], "choose five-bar or rod")):
        assert main(["gains", *argv, "--out", str(tmp_path / "x.h")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, err


@pytest.mark.parametrize("name", [ROD, FIVE_BAR])
def test_the_team_firmware_balances_from_five_degrees(name, tmp_path):
    model = load_model(name)
    # 2 s: the legs' split (one leg forward, the other back), which the one-leg model cannot see, grows within
    # 1.5 s unless its PD holds it.
    loop = control.closed_loop(model, name, 0.30, np.radians(5.0), 2.0, tmp_path)
    for who, coords in loop.coordinates.items():
        assert loop.traces[who].stopped is None
        # Caught: from 5 deg the leg's angle passes upright and is back within 0.5 deg (the design's own
        # response is at 0.1 deg then); the body's pitch within 0.1 deg.
        theta, phi = np.degrees(coords[-1, 0]), np.degrees(coords[-1, 2])
        assert abs(theta) < 0.5 and abs(phi) < 0.1, (who, theta, phi)
    n = min(len(c) for c in loop.coordinates.values())
    pitch = {who: np.degrees(c[:n, 2]) for who, c in loop.coordinates.items()}
    double, single = (np.abs(pitch[p] - pitch["python"]).max() for p in ("double", "float"))
    assert double <= control.DOUBLE_TOL_DEG and single <= control.FLOAT_TOL_DEG
    assert single > 0.0  # the float build computes in float
    assert (tmp_path / control.HEADER).is_file()


def test_the_firmware_takes_its_gains_from_the_header(rod, points, tmp_path):
    """The same firmware with a header of zero gains commands no wheel torque at all from a tilt."""
    reduction, _ = points[0.30]
    gains = control.design(rod)
    zero = GainSchedule(gains.lengths, 0 * gains.gains, 0 * gains.coeffs, 0.0, gains.state_names, gains.input_names)
    qpos, qvel = control.tilted(rod, reduction, np.radians(5.0))
    wheels = list(control.channels(rod).wheels)
    commanded = []
    for sched, folder in ((gains, tmp_path / "designed"), (zero, tmp_path / "zero")):
        control.write_header(sched, folder)
        firmware = control.flash(control.firmware(folder, "float"), rod, 0.30)
        commanded.append(np.abs(control.balance_run(rod, firmware, qpos, qvel, 0.01).command[:, wheels]).max())
    assert commanded[0] > 1.0 and commanded[1] == 0.0


def test_bad_declarations_are_refused_in_words(rod, points):
    with pytest.raises(ParameterError, match="no joint 'knee'"):
        Reduction.from_coordinates(rod, states={"theta": "knee"}, inputs={"T": {"left_wheel": 1.0}})
    with pytest.raises(ParameterError, match="no actuator 'left_motor'"):
        Reduction.from_coordinates(rod, states={"theta": "left_hip"}, inputs={"T": {"left_motor": 1.0}})
    with pytest.raises(ParameterError, match="cannot move while"):  # the hip cannot move with itself held
        Reduction.from_coordinates(rod, states={"hip": "left_hip"}, hold={"same": "left_hip"},
                                   inputs={"T": {"left_wheel": 1.0}})
    reduction, params = points[0.30]
    plain = Reduction(reduction.lift, reduction.read, reduction.inputs, reduction.state_names, reduction.input_names)
    with pytest.raises(ParameterError, match="declared with Reduction.from_coordinates"):
        check_forward_dynamics(_accelerations(params), rod, reduction=plain)
    with pytest.raises(ModelError, match="not a wheel-legged biped"):
        free_hip_reduction(load_model("cart_pole"), 0.3)
