"""The biped's C firmware (controllers/biped/firmware/biped.c) in the loop beside the Python controller.

The float build follows the Python controller's pitch to the gain table's
interpolation (linear where Python fits a cubic), float's own rounding is far
smaller and not zero, and a sign slip in the firmware's gain table drops the robot.
"""

from __future__ import annotations

import numpy as np
import pytest

from crossdyn.experiments.biped import firmware as fw
from crossdyn.experiments.biped.scenarios import ALPHA_NOMINAL, balance_scenario, controller_for, robot, stance_height

DURATION = 1.0  # s: the tilt is caught and most of it recovered within the first second


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        model = robot()
        yield model, stance_height(ALPHA_NOMINAL), balance_scenario(10.0, DURATION)


def _flashed(precision, model, height):
    return fw.flash(fw.firmware(precision), model, controller_for(), height)


def test_float_firmware_follows_the_python_controller(setup):
    model, height, sc = setup
    python = fw.run_in_loop(model, sc, controller_for())
    single = fw.run_in_loop(model, sc, _flashed("float", model, height))
    double = fw.run_in_loop(model, sc, _flashed("double", model, height))
    assert python.stopped is single.stopped is double.stopped is None
    assert fw.compare(model, single, python)["pitch_deg"] < fw.PITCH_TOL_DEG
    float_effect = fw.compare(model, single, double)
    # Float's rounding (6e-8 relative) on pitch terms of ~10 deg and a gain table of ~10 N m/rad: ~1e-6 deg
    # (measured 1e-6); 1e-4 leaves a factor 100.  Not zero: the float build really computes in float.
    assert 0 < float_effect["pitch_deg"] < 1e-4, float_effect
    assert np.array_equal(single.command.astype(np.float32).astype(float), single.command)


def test_a_sign_slip_in_the_gain_table_drops_the_robot(setup):
    model, height, sc = setup
    c = _flashed("float", model, height)
    table = c.params["table_gain"]
    table[:, 2] = -table[:, 2]  # the pitch gain with the wrong sign
    c.params["table_gain"] = table
    assert fw.run_in_loop(model, sc, c).stopped == "fell"


def test_the_firmware_is_installed_with_the_package():
    assert fw._source().is_file() and fw._source().parent.name == "firmware"


def test_float_clock_starts_the_turn_one_control_period_early(setup):
    """The loop's time just below 0.5 s reads 0.5 in float: the float build turns one step before the double."""
    model, height, _ = setup
    sc = fw.turn_scenario(90.0, 0.51, height)
    first = {}
    for precision in ("double", "float"):
        c = fw.flash(fw.firmware(precision), model, controller_for(), height, yaw=np.radians(90.0), start=0.5)
        trace = fw.run_in_loop(model, sc, c)
        differential = np.abs(trace.ctrl[:, 0] - trace.ctrl[:, 1])
        first[precision] = int(np.flatnonzero(differential > 0.1)[0])  # N m: the turn's torque, not round-off
    assert first["float"] == first["double"] - 1, first
