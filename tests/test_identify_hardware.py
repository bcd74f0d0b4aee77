"""identify and check model on a real robot's logs: the DFKI torque-limited simple pendulum.

The logs in tests/data/dfki_simple_pendulum were measured on a physical testbed (its README
says where they come from): the angle the motor reports, on a grid of 191/65535 rad (the
16 bits of its CAN reply over -95.5 .. 95.5 rad), the motor's own velocity estimate, and
the torque the motor measured (``ctrl:motor``).  ``pendulum.xml`` is the testbed as its
makers publish it.  No simulator wrote these logs and nobody tuned identify on them.

- identify fits the swing-up log and agrees with an output-error fit written here, in
  NumPy and SciPy alone, on what a torque-driven pendulum's logs can tell: its inertia
  and gravity torque per unit of logged torque (the torque scale and the mass trade
  off, so only those ratios are the robot's);
- check model ranks the identified model above the published one on a log the fit never
  saw, each reading's noise taken from the encoder's grid;
- an encoder that mostly sits still (the testbed balancing upright) takes its noise from
  its grid, and a noise-free log of a 4096-count encoder passes its own model and fails
  a 20 % heavier one: the two false alarms real logs raised before noise was stated.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import mujoco
import numpy as np
import pytest
from scipy.optimize import least_squares
from scipy.sparse import lil_matrix

import crossdyn
from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.identify.fit import WINDOW
from crossdyn.experiments.core.identify.logs import write_log

DATA = Path(__file__).parent / "data" / "dfki_simple_pendulum"
PUBLISHED = DATA / "pendulum.xml"
FITTED_LOG = DATA / "direct_collocation.csv"  # a 3.5 s swing-up: the torque and the angle both sweep widely
HELD_OUT = DATA / "pd_constant_torque.csv"  # 6 s of free swings under a constant torque, decaying to rest
# rad: the motor's CAN reply packs the angle in 16 bits over -95.5 .. 95.5 rad (the data's README)
GRID = 191 / 65535
# What the output-error fit below fits, in crossdyn's words: the torque scale (gear), a constant torque
# offset (bias), both frictions, and the centre of mass's distance below the hinge, which moves the
# gravity torque (m g d) and the inertia about the hinge (m d^2) differently: with the gear, both the inertia
# and the gravity torque per unit of logged torque are free.
FIT = ["actuator:motor:gear", "actuator:motor:bias", "joint:hinge:damping", "joint:hinge:frictionloss",
       "body:pendulum:com[2]"]
# Both fits are in units of the logged torque and see the same samples in the same windows, so the log's own
# errors move them alike; what separates them is how each models the pendulum (friction as MuJoCo's constraint
# or as a tanh, Euler at 1 ms or RK4 on the log's samples, starts tied to the velocity reading or free), which
# on a log neither reproduces to its grid moves a fitted ratio by about a percent.  Twice that: still ten times
# below the 18-20 % by which the published model is off, which the same comparison must reject.
AGREE = 0.02
# rad/s: the Coulomb friction as a tanh at 76 % of its level at 0.01 rad/s, a step on the scale of swings that
# turn at about 10 rad/s^2 (through +-0.01 rad/s in 2 ms, under a sample), yet smooth enough for RK4 on 3 ms
# samples (its slope c / (J SMOOTH), about 65/s, is far below RK4's limit of 2.8 / 3 ms).
SMOOTH = 0.01


def _read(path: Path) -> dict[str, np.ndarray]:
    table = np.genfromtxt(path, delimiter=",", names=True)
    return {"time": table["time"], "tau": table["ctrlmotor"], "q": table["qposhinge"], "qd": table["qvelhinge"]}


def _output_error_fit(path: Path, window: float) -> dict[str, float]:
    """The pendulum's equation of motion fitted to a log by simulating it: no MuJoCo, no crossdyn.

    ``J qdd + b qd + c tanh(qd / SMOOTH) + mgl sin(q) = tau + offset``, with ``tau`` the logged
    torque (linear between samples), integrated by RK4 over the log's own sample instants from
    each window's start (its angle and velocity fitted too, unpenalised), and
    ``scipy.optimize.least_squares`` on the angle's error.  Independent of crossdyn's fit:
    another simulator (this equation, not MuJoCo's Euler steps with friction as a
    constraint), another optimizer, free starts instead of starts tied to the logged
    velocity, and no noise model (plain radians).  The equation holds the logged torque
    at scale 1, so ``J``, ``mgl``, ``b``, ``c`` are each the robot's divided by the torque scale.

    Returns:
      ``{"J": kg m^2, "mgl": N m, "b": N m s/rad, "c": N m, "offset": N m}``, per unit of logged torque.
    """
    log = _read(path)
    n = int(round(window / float(np.median(np.diff(log["time"])))))  # samples per window
    w = log["time"].size // n  # whole windows (crossdyn's last window takes the last sample or two too)
    t, tau, q = (log[k][: w * n].reshape(w, n) for k in ("time", "tau", "q"))
    h = np.diff(t, axis=1)

    def simulate(theta: np.ndarray, q0: np.ndarray, v0: np.ndarray) -> np.ndarray:
        inertia, mgl, b, c, offset = theta

        def acceleration(x, v, u):
            return (u + offset - b * v - c * np.tanh(v / SMOOTH) - mgl * np.sin(x)) / inertia

        out = np.empty((w, n))
        x, v = q0.copy(), v0.copy()
        out[:, 0] = x
        for k in range(n - 1):
            u0, u1 = tau[:, k], tau[:, k + 1]
            um, hk = (u0 + u1) / 2, h[:, k]
            a1 = acceleration(x, v, u0)
            a2 = acceleration(x + hk / 2 * v, v + hk / 2 * a1, um)
            a3 = acceleration(x + hk / 2 * (v + hk / 2 * a1), v + hk / 2 * a2, um)
            a4 = acceleration(x + hk * (v + hk / 2 * a2), v + hk * a3, u1)
            x = x + hk / 6 * (v + 2 * (v + hk / 2 * a1) + 2 * (v + hk / 2 * a2) + (v + hk * a3))
            v = v + hk / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
            out[:, k + 1] = x
        return out

    def residual(p: np.ndarray) -> np.ndarray:
        return (simulate(p[:5], p[5 : 5 + w], p[5 + w :]) - q).ravel()

    # Each window's start moves only its own samples: the Jacobian takes 5 + 2 evaluations, not one per column.
    sparsity = lil_matrix((w * n, 5 + 2 * w), dtype=int)
    sparsity[:, :5] = 1
    for k in range(w):
        sparsity[k * n : (k + 1) * n, [5 + k, 5 + w + k]] = 1
    start = np.concatenate([[0.1, 1.0, 0.01, 0.01, 0.0], q[:, 0], log["qd"][: w * n : n]])  # not the published values
    low = np.concatenate([[1e-3, 1e-2, 0.0, 0.0, -5.0], np.full(2 * w, -np.inf)])
    high = np.concatenate([[10.0, 100.0, 10.0, 10.0, 5.0], np.full(2 * w, np.inf)])
    found = least_squares(residual, start, bounds=(low, high), jac_sparsity=sparsity, x_scale="jac")
    assert found.success, found.message
    return dict(zip(("J", "mgl", "b", "c", "offset"), (float(v) for v in found.x[:5]), strict=True))


def _pendulum(path: Path) -> dict[str, float]:
    """What a model's MJCF says of the equation above: ``J`` (kg m^2, armature included), ``mgl`` (N m), the
    frictions, and its motor's gear and bias, read from the compiled model."""
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    data.qpos[0] = math.pi / 2  # the arm horizontal: the gravity torque is all of m g l
    mujoco.mj_forward(model, data)
    inertia = np.zeros((1, 1))
    mujoco.mj_fullM(model, data, inertia)
    return {"J": float(inertia[0, 0]), "mgl": float(data.qfrc_bias[0]), "b": float(model.dof_damping[0]),
            "c": float(model.dof_frictionloss[0]), "gear": float(model.actuator_gear[0, 0]),
            "bias": float(model.actuator_biasprm[0, 0])}


def _crossdyn(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def identified(tmp_path_factory) -> dict:
    """``crossdyn identify`` on the swing-up log, as a user would run it: the exit, the text, the outputs."""
    out = tmp_path_factory.mktemp("identify")
    # --start-only: the motor's velocity estimate starts each window, its noise its own (estimated); it is
    # not a reading of the state to compare with.  No --noise: the angle's grid is found from the readings.
    argv = ["identify", "--mjcf", str(PUBLISHED), "--log", str(FITTED_LOG), "--start-only", "qvel:*", "--out", str(out)]
    code, text, err = _crossdyn(argv + [a for spec in FIT for a in ("--fit", spec)])
    return {"code": code, "text": text, "err": err, "json": json.loads((out / "identified.json").read_text()),
            "xml": out / "identified.xml"}


def test_identify_agrees_with_an_independent_output_error_fit(identified):
    """Inertia and gravity torque per unit of logged torque: identify's and the fit above agree within AGREE."""
    independent = _output_error_fit(FITTED_LOG, WINDOW)
    fitted, published = _pendulum(identified["xml"]), _pendulum(PUBLISHED)
    saved = {p["name"]: p for p in identified["json"]["parameters"]}
    # The XML is the fit (MuJoCo writes an MJCF's numbers with 8 significant digits).
    assert math.isclose(fitted["gear"], saved["actuator:motor:gear"]["value"], rel_tol=1e-7)
    k = fitted["gear"]
    for key in ("J", "mgl"):
        ratio = fitted[key] / k / independent[key]
        assert abs(ratio - 1) < AGREE, (key, fitted[key] / k, independent[key])
        # The same comparison rejects the published pendulum (gear 1): it can fail.
        assert abs(published[key] / independent[key] - 1) > AGREE, (key, published[key], independent[key])
    # What the log barely pins down (identify's intervals span them widely): the independent values, in
    # crossdyn's terms (a joint's friction is the fit's times the torque scale; the offset is the bias
    # before the gear), lie inside identify's intervals.
    for name, value in (("joint:hinge:damping", k * independent["b"]), ("joint:hinge:frictionloss",
                                                                        k * independent["c"]),
                        ("actuator:motor:bias", independent["offset"])):
        assert saved[name]["low"] <= value <= saved[name]["high"], (name, value, saved[name])
    # The noise: the angle's from its grid, found by identify itself; the velocity estimate's from its own
    # differences (they agree: white beyond its grid).
    noise = identified["json"]["noise"]
    assert noise["qpos:hinge"]["source"] == "quantization", noise
    assert math.isclose(noise["qpos:hinge"]["value"], GRID / math.sqrt(12), rel_tol=1e-6), noise  # 17-digit CSV
    assert noise["qvel:hinge"]["source"] == "estimated", noise


def test_identify_says_the_fitted_pendulum_still_misses_the_real_log(identified):
    """Not confidently wrong: no rigid pendulum driven by the measured torque follows the log to its grid.

    The fitted model misses the swing-up by several times the grid's noise with errors that run
    together (the measured torque's own noise, integrated, and what no parameter holds): identify
    says so (exit 1) and does not call its intervals 95 % ones.
    """
    assert identified["code"] == 1, identified["text"] + identified["err"]
    assert "the fitted model still misses direct_collocation.csv by" in identified["text"], identified["text"]
    assert not identified["json"]["intervals"]["supported"], identified["json"]["intervals"]


def test_check_model_ranks_the_identified_pendulum_above_the_published_one_on_a_log_not_fitted(identified,
                                                                                               tmp_path):
    """On the constant-torque log (never fitted): the identified model misses less; the published one fails,
    the log rejecting its scale in the direction the independent fit found (heavier, or a weaker torque)."""
    verdicts = {}
    for name, mjcf in (("published", PUBLISHED), ("identified", identified["xml"])):
        out = tmp_path / name
        code, text, err = _crossdyn(["check", "model", "--mjcf", str(mjcf), "--log", str(HELD_OUT), "--start-only",
                                     "qvel:*", "--out", str(out)])
        assert code in (0, 1), text + err
        verdicts[name] = json.loads((out / "check-model.json").read_text())
        noise = verdicts[name]["noise"]["qpos:hinge"]
        assert noise["source"] == "quantization" and math.isclose(noise["value"], GRID / math.sqrt(12),
                                                                  rel_tol=1e-6), noise
    published, fitted = verdicts["published"], verdicts["identified"]
    assert published["verdict"] == "fail", published["text"]
    assert fitted["worst"]["rms"] < published["worst"]["rms"], (fitted["text"], published["text"])
    # The published model is 18-20 % light for the logged torque: the log says its mass is too small or its
    # gear too large, as the swing-up's fit says (m g l per unit torque above the published).
    # Whether either alone passes the Bonferroni test over all 8 parameters depends on the window's start
    # refinement (z about 2.5 to 3); its direction does not.
    parameters = published["parameters"]
    assert parameters["body:pendulum:mass"]["estimate"] > 0, parameters["body:pendulum:mass"]
    assert parameters["actuator:motor:gear"]["estimate"] < 0, parameters["actuator:motor:gear"]


def test_an_encoder_that_mostly_sits_still_takes_its_noise_from_its_grid(tmp_path):
    """The testbed balancing upright for 2 s: the angle repeats itself on most samples, yet its noise is its grid.

    A noise estimated from differences finds nothing there (most second differences are 0) and
    once fell to a 1e-9 floor, so that any model missed the log by 1e5 times "its noise".
    """
    log = _read(DATA / "energy_shaping.csv")
    keep = (log["time"] >= 5.0) & (log["time"] < 7.0)  # s: balancing, the angle wandering over 35 mrad
    q = log["q"][keep]
    assert np.mean(np.diff(q, n=2) == 0) > 0.5  # it sits still: most second differences vanish
    path = write_log(tmp_path / "balancing.csv", log["time"][keep], {"ctrl:motor": log["tau"][keep],
                                                                     "qpos:hinge": q, "qvel:hinge": log["qd"][keep]})
    verdict = crossdyn.check_model(PUBLISHED, [path], start_only=["qvel:*"], threads=1)
    noise = verdict.noise["qpos:hinge"]
    assert noise["source"] == "quantization" and math.isclose(noise["value"], GRID / math.sqrt(12), rel_tol=1e-6)
    # Judged against a real noise: the replay's RMS error, in radians, is below the angle's own spread in
    # the window (each window starts on the log), not a multiple of round-off.
    assert 0 < verdict.worst["rms"] * noise["value"] < np.ptp(q), verdict.text


def test_a_noise_free_log_of_a_4096_count_encoder_passes_its_own_model_and_fails_a_heavier_one(tmp_path):
    """pendulum.xml driven by the torque the real swing-up measured, logged without noise on 4096 counts a turn."""
    model = mujoco.MjModel.from_xml_path(str(PUBLISHED))
    real = _read(FITTED_LOG)
    time, columns = crossdyn.record(model, lambda t, reading: np.array([np.interp(t, real["time"], real["tau"])]),
                                    3.0, signals=["qpos:hinge"])  # s: six windows, the swing-up's first swings
    step = 2 * math.pi / 4096  # rad per count
    columns["qpos:hinge"] = np.round(columns["qpos:hinge"] / step) * step
    path = write_log(tmp_path / "encoder.csv", time, columns)
    own = crossdyn.check_model(PUBLISHED, [path], threads=1)
    assert own.verdict == "pass", own.text
    assert own.noise["qpos:hinge"]["source"] == "quantization"
    assert math.isclose(own.noise["qpos:hinge"]["value"], step / math.sqrt(12), rel_tol=1e-6)
    # The check can fail: the same log against the pendulum 20 % heavier (the scale the real logs show).
    spec = mujoco.MjSpec.from_file(str(PUBLISHED))
    for geom in ("rod", "point_mass"):
        spec.geom(geom).mass = spec.geom(geom).mass * 1.2
    heavier = tmp_path / "heavier.xml"
    heavier.write_text(spec.to_xml())
    assert crossdyn.check_model(heavier, [path], threads=1).verdict == "fail"


# Fitting one principal moment of a slender body (the hinge axis of this rod, inertia[1]) once let the
# optimizer step past A + B >= C, and MuJoCo's compiler raised a ValueError from inside the fit (a traceback
# from the CLI): the moment's box now stays within the others' sum and difference.
def test_fitting_one_moment_of_a_rods_inertia_stays_physical_or_refuses(tmp_path):
    log = _read(FITTED_LOG)
    keep = log["time"] < 1.5  # s: three windows are enough to step past the limit
    path = write_log(tmp_path / "swing.csv", log["time"][keep], {"ctrl:motor": log["tau"][keep],
                                                                 "qpos:hinge": log["q"][keep],
                                                                 "qvel:hinge": log["qd"][keep]})
    code, text, err = _crossdyn(["identify", "--mjcf", str(PUBLISHED), "--log", str(path), "--fit",
                                 "body:pendulum:inertia[1]", "--start-only", "qvel:*", "--out", str(tmp_path / "o")])
    if code == 2:
        assert err.count("\n") == 1 and "inertia" in err, err
        return
    assert code in (0, 1), text + err
    moments = mujoco.MjModel.from_xml_path(str(tmp_path / "o" / "identified.xml")).body("pendulum").inertia
    assert moments[1] <= (moments[0] + moments[2]) * (1 + 1e-7), moments  # MuJoCo writes 8 significant digits
