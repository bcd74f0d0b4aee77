"""Bad input, across every command and option: exit 2, one line on stderr, no traceback.

One table: each row is a command line (with ``{tmp}`` for a scratch folder holding
the bad files below) and a phrase its one-line message must contain.  The rows
cover the reliability pass's findings and their siblings: seeds, counts, times,
impulses, paths (missing, a file where a folder belongs, under a file, in
/proc), models (missing, malformed, NaN, the wrong kind), state files, user
functions, experiment names and parameters.  Nothing may be written into the
output folder when the input is refused.

Bad input to the pytest plugin (``--crossdyn-from``, baseline files, the fixture
used outside a test file) has its own table, ``BAD_INPUT`` in
tests/test_pytest_plugin.py: there the rule is pytest's failure or usage error
with the reason on one line, never an internal error.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from crossdyn import mjcf
from crossdyn.experiments.core.cli import main

BAD_FILES = {
    "malformed.xml": "<mujoco><worldbody><body></worldbody></mujoco>",
    "nan_mass.xml": """<mujoco><worldbody><body name="a"><joint name="j1" type="hinge" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 0 -0.3 0" size="0.01" mass="nan"/></body></worldbody></mujoco>""",
    "three_joints.xml": """<mujoco><option gravity="0 -9.81 0"/><worldbody>
      <body name="a"><joint name="j1" type="hinge" axis="0 0 1"/><geom type="sphere" size="0.01" pos="0 -0.1 0"/>
      <body name="b" pos="0 -0.2 0"><joint name="j2" type="hinge" axis="0 0 1"/>
        <geom type="sphere" size="0.01" pos="0 -0.1 0"/>
      <body name="c" pos="0 -0.2 0"><joint name="j3" type="hinge" axis="0 0 1"/>
        <geom type="sphere" size="0.01" pos="0 -0.1 0"/>
      </body></body></body></worldbody></mujoco>""",
    "a_file": "not a folder",
    "raises.py": "raise RuntimeError('broken at import')\n",
    "not_python.txt": "x = 1\n",
    "fine.py": "import numpy as np\ndef tau(q, qd, qdd):\n    return np.zeros(2)\n",
    "nan_states.csv": "0,0,0,0,nan,0\n",
    "short_rows.csv": "0,0,0\n",
    "short_header.csv": "q1,q2,qd1\n0,0,0,0,0,0\n",
    "syntax.py": "from crossdyn import experiment\ndef broken(:\n",
    "exits.py": "import sys\nsys.exit(3)\n",
    "takes_turn.py": ("from crossdyn import experiment\n\n"
                      "@experiment('turn', summary='mine', expected='mine')\ndef turn(ctx):\n    return {}\n"),
    "bad_expected.py": ("from crossdyn import experiment\n\n"
                        "@experiment('bad-expected', summary='-', expected='reach {speed} m/s')\n"
                        "def run(ctx):\n    return {}\n"),
    "baselines/other-experiment.json": '{"metrics": {}}',
    "not_baselines/two-link-lagrange.json": "[1, 2]",
    "empty.csv": "",
    # Users' controllers that fail in the generic closed loop, each in an experiment crossdyn tune runs.
    "controllers.py": (
        "import numpy as np\nfrom crossdyn import Param, experiment, simulate\n\n"
        "LAWS = {'shape': lambda t, obs: np.zeros(3), 'nan': lambda t, obs: np.array([np.nan]),\n"
        "        'raise': lambda t, obs: {}['gain'], 'exit': lambda t, obs: exit(0),\n"
        "        'name': lambda t, obs: {'pull': 1.0}, 'text': lambda t, obs: 'push',\n"
        "        'complex': lambda t, obs: np.array([1 + 1j]), 'none': lambda t, obs: None}\n\n"
        "for kind, law in LAWS.items():\n"
        "    @experiment(f'{kind}-controller', summary='-', expected='-', params={'gain': Param(1.0, '-', 0, 10)})\n"
        "    def run(ctx, law=law):\n"
        "        simulate('cart_pole', law, 0.1)\n"
        "        return {'passed': True, 'measured': '-', 'x': 1.0}\n"),
    "comments_only.csv": "# q1, q2, qd1, qd2, qdd1, qdd2\n",
    # users' functions for the quantity checks (the 7-dof arm of tests/models: nq = nv = nu = 7)
    "parts_bad.py": ("import sys\nimport numpy as np\n\n"
                     "def wrong_shape(q):\n    return np.zeros(4)\n\n"
                     "def nan(q):\n    return np.full((7, 7), np.nan)\n\n"
                     "def divides(q):\n    return 1 / 0\n\n"
                     "def exits(q):\n    sys.exit(0)\n\n"
                     "def three(q, qd):\n    return 1.0, 2.0, 3.0\n\n"
                     "def lin(q, qd, u):\n    return np.zeros((14, 14)), np.zeros((14, 7))\n\n"
                     "def lin_a_only(q, qd, u):\n    return np.zeros((14, 14))\n\n"
                     "def zeroes_q(q):\n    q[...] = 0\n    return np.eye(7)\n\n"
                     "def zeroes_tau(q, qd, tau):\n    tau[...] = 0\n    return np.zeros(7)\n"),
    "hangs.py": "import time\n\ndef M(q):\n    time.sleep(600)\n",
    "nan_q.csv": "0,0,0,nan,0,0,0\n",
    "short_q.csv": "0,0,0\n",
}

# Experiments with names that would write outside --out, hide, or hold a NUL (issue 26).
BAD_NAMES = {"parent": "../x", "absolute": "/tmp/x", "empty": "", "nul": "a\x00b", "hidden": ".x",
             "space": "a b", "newline": "a\nb"}
BAD_FILES.update({
    f"name_{key}.py": (f"from crossdyn import experiment\n\n@experiment({name!r}, summary='-', "
                       "expected='-')\ndef run(ctx):\n    return {'passed': True, 'measured': '-'}\n")
    for key, name in BAD_NAMES.items()})
# User code that ends its process: at import of a --from file, or in a derivation (issue 26).
BAD_FILES.update({
    "import_exit.py": "import os\nos._exit(0)\n",
    "import_segfault.py": "import ctypes\nctypes.string_at(0)\n",
    "derivation_exit.py": "import os\ndef tau(q, qd, qdd):\n    os._exit(0)\n",
    "derivation_segfault.py": "import ctypes\ndef tau(q, qd, qdd):\n    ctypes.string_at(0)\n",
    "derivation_abort.py": "import os\ndef tau(q, qd, qdd):\n    os.abort()\n",
    "derivation_import_exit.py": "import os\nos._exit(0)\ndef tau(q, qd, qdd):\n    return [0.0, 0.0]\n",
    # A baseline nested 100,000 deep: Python's JSON parser would raise RecursionError.
    "deep_baselines/two-link-lagrange.json": '{"metrics": ' + "[" * 100_000 + "]" * 100_000 + "}",
    # Far more bodies than any robot: MuJoCo would compile for minutes.
    "replicated_bodies.xml": ('<mujoco><worldbody><replicate count="200000" offset="0.01 0 0"><body>'
                              '<geom type="sphere" size="0.001" mass="0.001"/></body></replicate>'
                              '</worldbody></mujoco>'),
    "many_bodies.xml": ("<mujoco><worldbody>" + "".join(
        f'<body pos="{i} 0 0"><geom type="sphere" size="0.1" mass="1"/></body>' for i in range(20_000))
        + "</worldbody></mujoco>"),
})

# A user's experiment file whose C controller does not compile (issue 32): exit 2 naming the C file and line.
BAD_FILES.update({
    "c_broken.c": "double k = 1.0;\n\nvoid step(double t, const double *q, double *u)\n{\n    u[0] = k * ;\n}\n",
    "c_broken.py": ("from pathlib import Path\nfrom crossdyn import CController\n\n"
                    "c = CController(Path(__file__).parent / 'c_broken.c', 'step', inputs=('qpos',))\n"),
})

# State files that must be binary (.npy), written by the bad_files fixture.
BAD_ARRAYS = {
    "strings.npy": np.array([["a", "b", "c", "d", "e", "f"]]),
    "no_rows.npy": np.zeros((0, 6)),
    "cube.npy": np.zeros((2, 3, 6)),
    "one_row_1d_short.npy": np.zeros(5),
    "seven_columns.npy": np.zeros((2, 7)),
    "nan.npy": np.array([[0, 0, np.nan, 0, 0, 0]]),
}
# .npz logs with the same defects as the CSV ones (written by the bad_files fixture).
BAD_ARCHIVES = {
    "log_lengths.npz": {"time": np.arange(30) * 0.001, "qpos:shoulder": np.zeros(29)},
    "log_nan.npz": {"time": np.arange(30) * 0.001, "qpos:shoulder": np.r_[np.zeros(10), np.nan, np.zeros(19)]},
    "log_2d.npz": {"time": np.arange(30) * 0.001, "qpos:shoulder": np.zeros((30, 2))},
}



def _npz_bytes(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _npy_bytes(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


_GOOD_NPZ = _npz_bytes(time=np.arange(30) * 0.001, **{"qpos:shoulder": np.zeros(30)})
# .npz logs damaged as files get damaged: a .npy renamed, a copy cut short, a member's bytes changed.
DAMAGED_ARCHIVES = {
    "log_npy_renamed.npz": _npy_bytes(np.zeros((30, 2))),
    "log_truncated.npz": _GOOD_NPZ[: len(_GOOD_NPZ) // 2],
    "log_bad_member.npz": _GOOD_NPZ.replace(np.zeros(30).tobytes()[:64], b"\x01" * 64, 1),
    "log_not_zip.npz": b"time,qpos:shoulder\n0,0\n",
}

# Folders where a command writes a file (issue 15 #3: a samples.csv that is a directory).
BAD_FOLDERS = ("sweep/samples.csv", "map/samples.csv", "runs/two-link-lagrange/metrics.json")

# Bipeds that break the MJCF contract (beside the common.xml they include).
_BIPED = mjcf.path("wheel_legged_biped").read_text()
BAD_FILES.update({
    "common.xml": mjcf.path("common").read_text(),
    "no_wheel_motor.xml": _BIPED.replace('<motor name="left_wheel" joint="left_wheel" ctrlrange="-6 6"/>', ""),
    "no_closure.xml": _BIPED.replace('<connect name="right_closure" site1="right_rear_foot" site2="right_axle"/>', ""),
    # Every name present, but the left side's elements at -y (issue 26: a negative track width followed).
    "swapped_sides.xml": _BIPED.replace("left", "SIDE").replace("right", "left").replace("SIDE", "right"),
})

ARM = str(Path(__file__).parent / "models" / "arm7.xml")


# Robot logs for crossdyn identify / check model, read against tests/models/identify_arm.xml.
IDENTIFY_ARM = str(Path(__file__).parent / "models" / "identify_arm.xml")


def _arm_log(rows: int = 30, header: str = "time,ctrl:shoulder_motor,qpos:shoulder,qpos:elbow", edit=None) -> str:
    lines = [header] + [f"{i * 0.001:.3f},0.1,{0.001 * i:.6f},0.0" for i in range(rows)]
    if edit is not None:
        edit(lines)
    return "\n".join(lines) + "\n"


BAD_FILES.update({
    "log_ok.csv": _arm_log(),
    "log_time_back.csv": _arm_log(edit=lambda lines: lines.__setitem__(12, "0.005,0.1,0.011,0.0")),
    "log_nan.csv": _arm_log(edit=lambda lines: lines.__setitem__(7, "0.006,0.1,nan,0.0")),
    "log_inf.csv": _arm_log(edit=lambda lines: lines.__setitem__(9, "0.008,inf,0.008,0.0")),
    "log_misspelt.csv": _arm_log(header="time,ctrl:shoulder_motor,qpos:shoulder,qpos:elbw"),
    "log_short_row.csv": _arm_log(edit=lambda lines: lines.__setitem__(5, "0.004,0.1,0.004")),
    "log_text.csv": _arm_log(edit=lambda lines: lines.__setitem__(4, "0.003,push,0.003,0.0")),
    "log_few_rows.csv": _arm_log(rows=5),
    "log_no_time.csv": _arm_log(header="t,ctrl:shoulder_motor,qpos:shoulder,qpos:elbow"),
    "log_component.csv": _arm_log(header="time,ctrl:shoulder_motor,qpos:shoulder,qpos:elbow:0"),
    "log_bad_kind.csv": _arm_log(header="time,ctrl:shoulder_motor,torque:shoulder,qpos:elbow"),
    "log_commands_only.csv": "time,ctrl:shoulder_motor\n" + "".join(f"{i * 0.001:.3f},0.1\n" for i in range(30)),
    "log_unknown_motor.csv": _arm_log(header="time,ctrl:shoulder,qpos:shoulder,qpos:elbow"),
    # a 30 ms log stamped in milliseconds and one stamped in microseconds: refused at once, by their time step
    "log_ms.csv": _arm_log(edit=lambda lines: lines.__setitem__(
        slice(1, None), [f"{i}{line[line.index(','):]}" for i, line in enumerate(lines[1:])])),
    "log_us.csv": _arm_log(edit=lambda lines: lines.__setitem__(
        slice(1, None), [f"{1000 * i}{line[line.index(','):]}" for i, line in enumerate(lines[1:])])),
    # commands of 1e30 N m: no arm's log; the rollout from its state diverges
    "log_diverges.csv": _arm_log(header="time,ctrl:shoulder_motor,ctrl:elbow_motor,qpos:shoulder,qpos:elbow",
                                 edit=lambda lines: lines.__setitem__(
        slice(1, None), [line.replace(",0.1,", ",1e30,0,") for line in lines[1:]])),
    # a log without the elbow motor's commands: named, not replayed as 0 and blamed on a mass
    "log_no_elbow_command.csv": _arm_log(),
})

# What crossdyn tune --vary-from reads: an identified.json ('crossdyn identify' writes them).
_POLE = {"name": "body:pole:mass", "model": 0.1, "unit": "kg", "identified": True, "value": 0.12, "low": 0.11,
         "high": 0.13}
BAD_FILES.update({
    "identified_ok.json": json.dumps({"parameters": [_POLE]}),
    "identified_not_json.json": "parameters: body:pole:mass\n",
    "identified_no_parameters.json": json.dumps({"model": "cart_pole.xml"}),
    "identified_nothing.json": json.dumps({"parameters": [_POLE | {"identified": False, "low": None,
                                                                   "high": None}]}),
    "identified_other_model.json": json.dumps({"parameters": [_POLE | {"name": "body:link2:mass"}]}),
    "identified_bad_interval.json": json.dumps({"parameters": [_POLE | {"low": 0.125}]}),
})

# (arguments, phrase in the message).  {tmp} is the folder holding BAD_FILES.
def identify_log(log: str) -> list[str]:
    """``crossdyn identify`` of the arm's delay from one of the bad logs the fixture writes."""
    return ["identify", "--mjcf", IDENTIFY_ARM, "--log", f"{{tmp}}/{log}", "--fit", "delay"]


TUNE, MAP = ["tune", "biped-balance-tune"], ["tune", "biped-robustness-map"]  # the biped's two tunes
THOUSAND = ",".join(f"{1e-4 * i:g}" for i in range(1000))  # 1000 values of one axis, 0 to 0.0999

CASES = [
    # a folder where a command writes its table or metrics
    ([*TUNE, "--samples", "2", "--set", "duration_s=1", "--out", "{tmp}/sweep"], "samples.csv is not a file"),
    ([*TUNE, "--search", "optuna", "--trials", "2", "--set", "duration_s=1", "--out", "{tmp}/sweep"],
     "samples.csv is not a file"),
    ([*MAP, "--vary", "body_mass_scale=1", "--vary", "com_offset_x=0", "--search", "grid", "--set", "duration_s=1",
      "--out", "{tmp}/map"], "samples.csv is not a file"),
    (["run", "two-link-lagrange", "--short", "--out", "{tmp}/runs"], "metrics.json: Is a directory"),
    # seeds
    (["check", "two-link", "--seed", "-1"], "seed"),
    (["check", "two-link", "--seed", "abc"], "whole number"),
    (["check", "two-link", "--seed", "99999999999"], "seed"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "two_link_arm", "--seed", "-1"], "seed"),
    (["run", "two-link-lagrange", "--seed", "-1"], "seed"),
    ([*TUNE, "--seed", "-1"], "seed"),
    # counts
    (["check", "two-link", "--samples", "0"], "--samples"),
    (["check", "two-link", "--samples", "-5"], "--samples"),
    (["check", "two-link", "--samples", "1e3"], "whole number"),
    ([*TUNE, "--samples", "0"], "--samples"),
    ([*TUNE, "--samples", "100000000"], "--samples"),
    ([*TUNE, "--workers", "0"], "--workers"),
    # times, angles and impulses
    ([*TUNE, "--set", "duration_s=nan"], "duration_s='nan': not a number"),
    ([*TUNE, "--set", "duration_s=inf"], "duration_s=inf: out of range [0.6, 3600.0]"),
    ([*TUNE, "--set", "duration_s=-1"], "out of range"),
    ([*TUNE, "--set", "duration_s=1e9"], "out of range"),
    ([*TUNE, "--set", "push_check_Ns=nan"], "not a number"),
    ([*TUNE, "--set", "push_check_Ns=-5"], "out of range"),
    ([*TUNE, "--set", "initial_tilt_deg=100"], "out of range"),
    ([*MAP, "--set", "duration_s=nan"], "not a number"),
    # output folders
    (["check", "two-link", "--out", "{tmp}/a_file"], "not a folder"),
    (["check", "two-link", "--out", "{tmp}/a_file/below"], "is a file"),
    (["check", "two-link", "--samples", "5", "--out", "/proc/crossdyn"], "cannot create output folder"),
    (["run", "two-link-lagrange", "--out", "{tmp}/a_file"], "not a folder"),
    (["run", "two-link-lagrange", "--short", "--out", "/proc/crossdyn"], "cannot create output folder"),
    ([*TUNE, "--out", "{tmp}/a_file/below"], "is a file"),
    ([*MAP, "--out", "{tmp}/a_file"], "not a folder"),
    # models
    (["check", "two-link", "--mjcf", "{tmp}/missing.xml"], "no model file"),
    (["check", "two-link", "--mjcf", "{tmp}/malformed.xml"], "cannot compile"),
    (["check", "two-link", "--mjcf", "{tmp}/nan_mass.xml"], "NaN"),
    (["check", "two-link", "--mjcf", "{tmp}/three_joints.xml"], "2 joints"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "{tmp}/missing.xml"], "no model file"),
    (["check", "two-link", "--variant", "hamiltonian"], "invalid choice"),
    # state files
    (["check", "two-link", "--states", "{tmp}/missing.csv"], "no states file"),
    (["check", "two-link", "--states", "{tmp}/nan_states.csv"], "non-finite"),
    (["check", "two-link", "--states", "{tmp}/short_rows.csv"], "each row needs 6"),
    (["check", "two-link", "--states", "{tmp}/short_header.csv"], "its first row names 3 columns (q1, q2, qd1)"),
    # user functions
    (["check", "derivation", "{tmp}/missing.py:tau", "--mjcf", "two_link_arm"], "no derivation file"),
    (["check", "derivation", "{tmp}/fine.py", "--mjcf", "two_link_arm"], "FILE.py:FUNC"),
    (["check", "derivation", "{tmp}/fine.py:nope", "--mjcf", "two_link_arm"], "no function 'nope'"),
    (["check", "derivation", "{tmp}/raises.py:tau", "--mjcf", "two_link_arm"], "failed to import"),
    # experiments and their parameters
    (["run", "no-such-experiment"], "no experiment"),
    (["run", "biped-balance-tune", "--set", "duration_s=0.1"], "out of range"),
    (["run", "turn", "--set", "spin=3"], "spin"),
    (["run", "turn", "--set", "turn_deg=left"], "expected a float"),
    (["run", "turn", "--set", "turn_deg=1000"], "out of range"),
    (["run", "turn", "--set", "turn_deg=nan"], "not a number"),
    (["run", "turn", "--set", "turn_deg"], "KEY=VALUE"),
    # tuning inputs
    ([*TUNE, "--vary", "q_z=1,2"], "has no parameter 'q_z' to vary"),
    ([*TUNE, "--vary", "q_x="], "a list of values"),
    ([*TUNE, "--vary", "q_x=-1", "--search", "grid"], "out of range"),
    ([*TUNE, "--vary", "q_x=10:1:log"], "need finite LO <= HI"),
    ([*MAP, "--set-from", "{tmp}/missing"], "cannot read the best run's parameters"),
    ([*MAP, "--vary", "body_mass_scale=1,2"], "a list of values is an axis of a grid"),
    ([*MAP, "--set", "q_x=1,2"], "expected a float"),
    # users' experiments (--from)
    (["run", "--from", "{tmp}/missing.py"], "no such file"),
    (["list", "--from", "{tmp}/missing.py"], "no such file"),
    (["run", "--from", "no_such_module_for_crossdyn"], "no such file or importable module"),
    (["run", "--from", "{tmp}/syntax.py"], "syntax error on line 2"),
    (["run", "--from", "{tmp}/not_python.txt"], "not a Python file"),
    (["run", "--from", "{tmp}/raises.py"], "broken at import (at "),  # the file and line kept
    (["list", "--from", "{tmp}/raises.py"], "raises.py:1)"),
    (["list", "--from", "{tmp}/exits.py"], "called exit(3)"),
    (["run", "--from", "{tmp}/takes_turn.py"], "registered twice"),
    (["run", "--from", "{tmp}/bad_expected.py"], "names {speed}"),
    # baselines, JUnit, workers
    (["run", "two-link-lagrange", "--baseline", "{tmp}/missing"], "no such folder"),
    (["run", "two-link-lagrange", "--baseline", "{tmp}/baselines"], "holds no baseline for two-link-lagrange"),
    (["run", "two-link-lagrange", "--baseline", "{tmp}/not_baselines"], "not a crossdyn baseline"),
    (["run", "two-link-lagrange", "--save-baseline", "{tmp}/a_file"], "not a folder"),
    (["run", "two-link-lagrange", "--junit", "{tmp}"], "is a folder"),
    (["run", "two-link-lagrange", "--junit", "{tmp}/a_file/junit.xml"], "is a file"),
    (["run", "two-link-lagrange", "--workers", "0"], "--workers"),
    (["run", "two-link-lagrange", "--workers", "-1"], "--workers"),
    (["run", "two-link-lagrange", "--workers", "100000"], "--workers"),
    (["run", "two-link-lagrange", "--workers", "two"], "whole number"),
    # check derivation's options for models as they come (issue 11), and state files (issue 15 #6)
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "two_link_arm", "--dynamics", "exact"], "invalid choice"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "two_link_arm", "--atol", "nan"], "finite"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "two_link_arm", "--atol", "-1e-9"], "--atol"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "two_link_arm", "--rtol", "2"], "--rtol"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "two_link_arm", "--rtol", "x"], "not a number"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "two_link_arm", "--states", "{tmp}/missing.csv"],
     "no states file"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "two_link_arm", "--states", "{tmp}/short_rows.csv"],
     "each row needs 6 numbers (q, qd, qdd), found 3"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "two_link_arm", "--states", "{tmp}/nan.npy"],
     "non-finite"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "two_link_arm", "--samples", "2000000000"],
     "--samples"),
    (["check", "two-link", "--states", "{tmp}/strings.npy"], "holds str"),
    (["check", "two-link", "--states", "{tmp}/empty.csv"], "has no rows; expected rows of 6 numbers"),
    (["check", "two-link", "--states", "{tmp}/comments_only.csv"], "has no rows"),
    (["check", "two-link", "--states", "{tmp}/no_rows.npy"], "has no rows"),
    (["check", "two-link", "--states", "{tmp}/cube.npy"], "holds a 3-D array of shape (2, 3, 6)"),
    (["check", "two-link", "--states", "{tmp}/one_row_1d_short.npy"], "found 5"),
    (["check", "two-link", "--states", "{tmp}/seven_columns.npy"], "found 7"),
    (["check", "two-link", "--states", "{tmp}/malformed.xml"], "cannot read states"),
    (["check", "two-link", "--samples", "2000000000"], "--samples"),
    # the quantity checks (issue 23): shapes, NaN, unknown names, functions that raise or exit
    (["check", "kinematics", "{tmp}/parts_bad.py:wrong_shape", "--mjcf", ARM, "--site", "tool"],
     "returned shape (4,) for one state; expected a position (3,)"),
    (["check", "kinematics", "{tmp}/parts_bad.py:wrong_shape", "--mjcf", ARM, "--site", "nope"], "no site 'nope'"),
    (["check", "kinematics", "{tmp}/parts_bad.py:wrong_shape", "--mjcf", ARM, "--body", "nope"], "no body 'nope'"),
    (["check", "kinematics", "{tmp}/parts_bad.py:wrong_shape", "--mjcf", ARM], "one of the arguments --site --body"),
    (["check", "kinematics", "{tmp}/parts_bad.py:divides", "--mjcf", ARM, "--site", "tool"],
     "parts_bad.py:11)"),  # the line of the user's file that raised
    (["check", "jacobian", "{tmp}/parts_bad.py:exits", "--mjcf", ARM, "--site", "tool"], "called sys.exit(0)"),
    (["check", "jacobian", "{tmp}/parts_bad.py:wrong_shape", "--mjcf", ARM, "--site", "tool", "--frame", "body"],
     "invalid choice"),
    (["check", "jacobian", "{tmp}/parts_bad.py:wrong_shape", "--mjcf", ARM, "--site", "tool", "--coordinates",
      "j1,nope"], "no joint 'nope'"),
    (["check", "mass-matrix", "{tmp}/parts_bad.py:nan", "--mjcf", ARM], "non-finite value at state 0"),
    (["check", "mass-matrix", "{tmp}/parts_bad.py:wrong_shape", "--mjcf", ARM],
     "returned shape (4,) for one state; expected a (7, 7) mass matrix"),
    (["check", "mass-matrix", "{tmp}/parts_bad.py:nan", "--mjcf", ARM, "--states", "{tmp}/nan_q.csv"],
     "non-finite"),
    (["check", "mass-matrix", "{tmp}/parts_bad.py:nan", "--mjcf", ARM, "--states", "{tmp}/short_q.csv"],
     "each row needs 7 numbers (q), found 3"),
    (["check", "bias", "{tmp}/parts_bad.py:nan", "--mjcf", ARM, "--states", "{tmp}/nan_q.csv"],
     "each row needs 14 numbers (q, qd), found 7"),
    (["check", "bias", "{tmp}/parts_bad.py:nope", "--mjcf", ARM], "no function 'nope'"),
    (["check", "energy", "{tmp}/parts_bad.py:three", "--mjcf", ARM],
     "returned a number, a number, a number for one state; expected (kinetic, potential) energies"),
    (["check", "energy", "{tmp}/parts_bad.py:three", "--mjcf", ARM, "--dynamics", "exact"], "invalid choice"),
    (["check", "forward-dynamics", "{tmp}/raises.py:f", "--mjcf", ARM], "raises.py:1)"),  # file and line kept
    (["check", "forward-dynamics", "no_such_module_for_crossdyn:f", "--mjcf", ARM],
     "no derivation file or importable module 'no_such_module_for_crossdyn'"),
    (["check", "forward-dynamics", "{tmp}/parts_bad.py:lin", "--mjcf", ARM, "--atol", "nan"], "finite"),
    (["check", "linearization", "{tmp}/parts_bad.py:lin", "--mjcf", ARM, "--keyframe", "nope"],
     "no keyframe 'nope' in the model (it has: home)"),
    (["check", "linearization", "{tmp}/parts_bad.py:lin", "--mjcf", ARM], "give the operating point"),
    (["check", "linearization", "{tmp}/parts_bad.py:lin", "--mjcf", ARM, "--qpos", "0,0,0"],
     "qpos must have 7 entries"),
    (["check", "linearization", "{tmp}/parts_bad.py:lin", "--mjcf", ARM, "--qpos", "0,nan,0"], "finite"),
    (["check", "linearization", "{tmp}/parts_bad.py:lin_a_only", "--mjcf", ARM, "--keyframe", "home"],
     "returned shape (14, 14) for one state; expected (A (14, 14), B (14, 7))"),
    (["check", "linearization", "{tmp}/parts_bad.py:three", "--mjcf", ARM, "--keyframe", "home"],
     "three() takes 2 positional arguments but 3 were given"),
    (["check", "linearization", "{tmp}/parts_bad.py:lin", "--mjcf", ARM, "--keyframe", "home", "--baseline",
      "{tmp}/missing"], "no such folder"),
    (["check", "jacobian", "{tmp}/parts_bad.py:lin", "--mjcf", ARM, "--site", "tool", "--junit", "{tmp}"],
     "is a folder"),
    # no false pass (issue 36): a function writing into its input, ranges, tolerances, a hang
    (["check", "mass-matrix", "{tmp}/parts_bad.py:zeroes_q", "--mjcf", ARM, "--samples", "5"],
     "zeroes_q wrote into its input q (state 0 of the batch, entry 0: "),
    (["check", "forward-dynamics", "{tmp}/parts_bad.py:zeroes_tau", "--mjcf", ARM, "--samples", "5"],
     "wrote into its input tau"),
    (["check", "mass-matrix", "{tmp}/parts_bad.py:nan", "--mjcf", ARM, "--q-range", "0"], "needs LOW < HIGH"),
    (["check", "mass-matrix", "{tmp}/parts_bad.py:nan", "--mjcf", ARM, "--q-range=-1,nan"], "must be finite"),
    (["check", "mass-matrix", "{tmp}/parts_bad.py:nan", "--mjcf", ARM, "--q-range", "1,2,3"], "takes R"),
    (["check", "mass-matrix", "{tmp}/parts_bad.py:nan", "--mjcf", ARM, "--qd-range", "1"], "unrecognized"),
    (["check", "bias", "{tmp}/parts_bad.py:nan", "--mjcf", ARM, "--qd-range", "x"], "takes R (for -R to R)"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "two_link_arm", "--qdd-range", "1e9"],
     "--qdd-range must lie within"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "two_link_arm", "--atol", "inf"],
     "--atol must be a finite number, got inf"),
    (["check", "mass-matrix", "{tmp}/hangs.py:M", "--mjcf", ARM, "--timeout", "1"],
     "hangs.py:M: the check did not finish within 1 s (--timeout)"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "two_link_arm", "--timeout", "0"],
     "--timeout must be in (0"),
    (["check", "linearization", "{tmp}/parts_bad.py:lin", "--mjcf", ARM, "--timeout", "nan"], "finite"),
    # your own robot, imperfections, robustness axes
    (["run", "balance-recovery", "--set", "mjcf={tmp}/no_wheel_motor.xml"], "missing actuator 'left_wheel'"),
    (["run", "turn", "--set", "mjcf={tmp}/no_closure.xml"], "missing equality 'right_closure'"),
    (["run", "five-bar", "--set", "mjcf={tmp}/missing.xml"], "no model file"),
    (["run", "jump", "--set", "mjcf={tmp}/malformed.xml"], "cannot compile"),
    ([*TUNE, "--set", "mjcf={tmp}/no_wheel_motor.xml"], "missing actuator 'left_wheel'"),
    ([*MAP, "--set", "mjcf={tmp}/missing.xml"], "no model file"),
    ([*MAP, "--seed", "-1"], "seed"),
    ([*MAP, "--seed", "x"], "whole number"),
    ([*MAP, "--vary", "delay=0.5", "--vary", "friction=1", "--search", "grid"], "expected a int"),
    ([*MAP, "--vary", "gyro_noise=-1", "--vary", "delay=1", "--search", "grid"], "out of range"),
    (["run", "turn", "--set", "delay=-1"], "out of range"),
    (["run", "turn", "--set", "gyro_noise=nan"], "not a number"),
    (["run", "turn", "--set", "realistic=maybe"], "expected a bool"),
    (["run", "lqr-cost", "--set", "realistic=true"], "has parameter(s) realistic"),
    # any experiment tuned (crossdyn tune EXPERIMENT), and --mjcf on run
    (["tune", "no-such-experiment", "--vary", "x=1:2"], "no experiment 'no-such-experiment'"),
    ([*TUNE, "--constraint", "effort_N2m2s<=default"], "expected METRIC<=VALUE"),
    (["tune", "cart-pole-lqr"], "give at least one --vary"),
    (["tune", "cart-pole-lqr", "--vary", "q_z=1:2"], "has no parameter 'q_z' to vary"),
    (["tune", "cart-pole-lqr", "--vary", "mjcf=1:2"], "a str parameter cannot be swept"),
    (["tune", "cart-pole-lqr", "--vary", "r=0:10"], "outside the parameter's range [1e-06, 1e+06]"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:0.1"], "need finite LO <= HI"),
    (["tune", "cart-pole-lqr", "--vary", "r=-1:1:log"], "outside the parameter's range"),
    (["tune", "cart-pole-lqr", "--vary", "q_x=0:1:log"], "a log range needs LO > 0"),
    (["tune", "cart-pole-lqr", "--vary", "r=nan:1"], "need finite LO <= HI"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2:lin"], "expected LO:HI or LO:HI:log"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--vary", "r=2:3"], "--vary r given twice"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--samples", "0"], "--samples"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--samples", "200000"], "--samples"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--search", "grid", "--samples", "1"], "needs --samples >= 2"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--search", "annealing"], "invalid choice"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--sampler", "tpe"], "--sampler is for --search optuna"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--search", "optuna", "--sampler", "cma"], "invalid choice"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--search", "optuna"], "needs --minimize"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--minimize", "r"], "'r' is a parameter this tune varies"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--constraint", "r<=1.5"], "'r' is a parameter this tune varies"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--constraint", "effort"], "expected METRIC<=VALUE"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--constraint", "effort<=inf"], "expected METRIC<=VALUE"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--set", "r=3"], "r is both --set and --vary"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--set", "step_m=9"], "out of range"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--seed", "-1"], "seed"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--timeout", "0"], "--timeout must be in (0, 1e+07]"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--timeout", "nan"], "finite"),
    ([*TUNE, "--timeout", "-5"], "--timeout must be in (0, 1e+07]"),
    ([*MAP, "--timeout", "x"], "not a number"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--workers", "0"], "--workers"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--out", "{tmp}/a_file"], "not a folder"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--from", "{tmp}/missing.py"], "no such file"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--set", "mjcf={tmp}/missing.xml"], "no model file"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--vary-from", "{tmp}/missing.json"], "cannot read it"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--vary-from", "{tmp}/identified_not_json.json"],
     "not an identified.json (not JSON)"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--vary-from", "{tmp}/identified_no_parameters.json"],
     "not an identified.json (no list of \"parameters\")"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--vary-from", "{tmp}/identified_nothing.json"],
     "no identified parameter to vary (body:pole:mass: not identified"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--vary-from", "{tmp}/identified_other_model.json"],
     "cart_pole.xml has no body 'link2'"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--vary-from", "{tmp}/identified_bad_interval.json"],
     "has no finite low <= value <= high"),
    (["tune", "pendulum-lagrange", "--vary", "length_scale=1:2", "--vary-from", "{tmp}/identified_ok.json"],
     "experiment 'pendulum-lagrange' takes no 'mjcf' parameter"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--vary-from", "{tmp}/identified_ok.json", "--minimize",
      "body:pole:mass"], "'body:pole:mass' is a model value --vary-from draws"),
    (["tune", "cart-pole-lqr", "--vary", "r=0.1:1", "--samples", "1", "--minimize", "settle"],
     "has no numeric metric 'settle'"),
    (["tune", "cart-pole-lqr", "--vary", "r=0.1:1", "--samples", "1", "--set", "mjcf=double_pendulum_cart"],
     "the defaults run of 'cart-pole-lqr' failed: LQR weights"),
    (["run", "cart-pole-lqr", "two-link-lagrange", "--mjcf", "cart_pole"], "take(s) no model"),
    (["run", "two-link-lagrange", "--mjcf", "cart_pole"], "none of the selected experiments takes a model"),
    (["run", "cart-pole-lqr", "--mjcf", "{tmp}/missing.xml"], "no model file"),
    (["run", "cart-pole-lqr", "--mjcf", "cart_pole", "--set", "mjcf=cart_pole"], "give the model once"),
    # metrics a tune cannot measure: the verdict, its text, the table's keys (issue 36)
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--minimize", "measured"],
     "'measured' describes a run (its verdict, text or key), not a numeric metric a tune can minimize"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--minimize", "passed"], "'passed' describes a run"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--constraint", "passed>=1"],
     "not a numeric metric a tune can bound"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--constraint", "outcome>=1"], "'outcome' describes a run"),
    (["tune", "cart-pole-lqr", "--vary", "r=1:2", "--minimize", "seed"], "'seed' describes a run"),
    # a user's controller failing in the closed loop: the step and time named
    *[(["tune", f"{kind}-controller", "--from", "{tmp}/controllers.py", "--vary", "gain=1:2", "--samples", "1"],
       phrase) for kind, phrase in (
        ("shape", "controller returned shape (3,) at control step 0 (t = 0 s); expected (1,)"),
        ("nan", "controller returned a non-finite control at control step 0 (t = 0 s)"),
        ("raise", "controller raised KeyError at control step 0 (t = 0 s): 'gain'"),
        ("exit", "controller called sys.exit(0) at control step 0 (t = 0 s)"),
        ("name", "controller returned a control for 'pull' at control step 0 (t = 0 s); the actuators are push"),
        ("text", "controller returned a str at control step 0 (t = 0 s); expected 1 controls"),
        ("complex", "controller returned a complex control at control step 0 (t = 0 s); expected 1 real controls"),
        ("none", "controller returned None at control step 0 (t = 0 s); expected 1 controls"))],
    # user code and names that would end the process or write outside --out (issue 26)
    *[(["run", "x", "--from", f"{{tmp}}/name_{key}.py"], "is not allowed") for key in BAD_NAMES],
    (["list", "--from", "{tmp}/name_parent.py"], "experiment name '../x' is not allowed"),
    (["run", "x", "--from", "{tmp}/import_exit.py"], "worker process ended (exit status 0) while importing it"),
    (["run", "x", "--from", "{tmp}/import_segfault.py"], "ended (signal SIGSEGV) while importing it"),
    (["list", "--from", "{tmp}/import_exit.py"], "ended (exit status 0)"),
    (["tune", "x", "--from", "{tmp}/import_exit.py", "--vary", "a=1:2"], "ended (exit status 0) while importing it"),
    (["check", "derivation", "{tmp}/derivation_exit.py:tau", "--mjcf", "two_link_arm", "--samples", "5"],
     "the process checking it ended (exit status 0)"),
    (["check", "derivation", "{tmp}/derivation_segfault.py:tau", "--mjcf", "two_link_arm", "--samples", "5"],
     "ended (signal SIGSEGV)"),
    (["check", "derivation", "{tmp}/derivation_abort.py:tau", "--mjcf", "two_link_arm", "--samples", "5"],
     "ended (signal SIGABRT)"),
    (["check", "derivation", "{tmp}/derivation_import_exit.py:tau", "--mjcf", "two_link_arm", "--samples", "5"],
     "ended (exit status 0)"),
    (["run", "two-link-lagrange", "--baseline", "{tmp}/deep_baselines"], "nests too deep"),
    (["run", "two-link-lagrange", "--timeout", "0"], "--timeout"),
    (["run", "two-link-lagrange", "--timeout", "-1"], "--timeout"),
    (["run", "two-link-lagrange", "--timeout", "nan"], "finite"),
    (["run", "two-link-lagrange", "--timeout", "soon"], "not a number"),
    (["run", "two-link-lagrange", "--timeout", "1e9"], "--timeout"),
    ([*TUNE, "--samples", "2", "--scheduler", "tls://127.0.0.1:8786"], "TLS scheduler needs certificates"),
    ([*TUNE, "--samples", "2", "--scheduler", "ws://127.0.0.1:8786"], "only tcp:// schedulers"),
    (["check", "two-link", "--mjcf", "{tmp}/replicated_bodies.xml"], "describes 200,000 bodies"),
    (["check", "derivation", "{tmp}/fine.py:tau", "--mjcf", "{tmp}/many_bodies.xml"], "at most 10,000"),
    (["run", "balance-recovery", "--set", "mjcf={tmp}/swapped_sides.xml"],
     "body 'left_front_thigh' is at y = -0.2 m"),
    (["run", "balance-recovery", "--set", "mjcf={tmp}/swapped_sides.xml"], "are left and right swapped?"),
    # a C controller that does not compile, at import of the user's file
    (["run", "--from", "{tmp}/c_broken.py"], "c_broken.c:5: expected expression before ';' token"),
    (["tune", "c-lqr", "--from", "{tmp}/c_broken.py", "--vary", "k=0:1"], "c_broken.c:5: expected expression"),
    # sizes: refused before anything is planned or allocated
    ([*TUNE, "--vary", "q_x=1:2", "--search", "grid", "--samples", "100000000"], "--samples"),
    ([*MAP, "--vary", f"com_offset_x={THOUSAND}", "--vary", f"push_impulse_Ns={THOUSAND}", "--search", "grid"],
     "the grid has 1,000,000 combinations"),
    ([*MAP, "--set", "duration_s=inf"], "out of range"),
    ([*MAP, "--set", "duration_s=1e9"], "out of range"),
    # the Optuna search
    ([*TUNE, "--search", "bogus"], "invalid choice"),
    ([*TUNE, "--search", "optuna", "--trials", "0"], "--samples"),
    ([*TUNE, "--search", "optuna", "--trials", "-3"], "--samples"),
    ([*TUNE, "--search", "optuna", "--trials", "2.5"], "whole number"),
    ([*TUNE, "--search", "optuna", "--trials", "100000000"], "--samples"),
    ([*TUNE, "--search", "optuna", "--vary", "q_x=1,2"], "a list of values is an axis of a grid"),
    ([*TUNE, "--search", "optuna", "--sampler", "cma"], "invalid choice"),
    ([*TUNE, "--sampler", "gp"], "--sampler is for --search optuna"),
    ([*TUNE, "--search", "optuna", "--set", "duration_s=nan"], "not a number"),
    ([*TUNE, "--search", "optuna", "--set", "push_check_Ns=-5"], "out of range"),
    # robot logs: crossdyn identify and check model (nothing fitted, nothing written)
    (identify_log("no_such_log.csv"), "no log file"),
    (identify_log("log_time_back.csv"), "time is not increasing at row 12"),
    (identify_log("log_nan.csv"), "row 7, column 'qpos:shoulder' is nan"),
    (identify_log("log_inf.csv"), "row 9, column 'ctrl:shoulder_motor' is inf"),
    (identify_log("log_misspelt.csv"), "qpos:elbw: no joint 'elbw' in identify_arm.xml (did you mean 'elbow'?)"),
    (identify_log("log_unknown_motor.csv"),
     "no actuator 'shoulder' in identify_arm.xml (did you mean 'shoulder_motor'?)"),
    (identify_log("log_short_row.csv"), "line 6 has 3 cells, the header has 4"),
    (identify_log("log_text.csv"), "line 5, column 'ctrl:shoulder_motor': 'push' is not a number"),
    (identify_log("log_few_rows.csv"), "a log needs at least 20"),
    (identify_log("log_no_time.csv"), "no 'time' column"),
    (identify_log("log_component.csv"), "qpos:elbow has one value"),
    (identify_log("log_bad_kind.csv"), "column 'torque:shoulder' is not time"),
    (identify_log("log_commands_only.csv"), "no qpos:, qvel: or sensor: column"),
    (identify_log("log_lengths.npz"), "the arrays have different lengths"),
    (identify_log("log_nan.npz"), "sample 10, column 'qpos:shoulder' is nan"),
    (identify_log("log_2d.npz"), "each column is a 1-D array"),
    (identify_log("log_npy_renamed.npz"), "not a readable .npz log (it holds one array, not an archive"),
    (identify_log("log_truncated.npz"), "not a readable .npz log"),
    (identify_log("log_bad_member.npz"), "not a readable .npz log"),
    (identify_log("log_not_zip.npz"), "not a readable .npz log"),
    (identify_log("log_ms.csv"), "its time column steps by 1 per sample: that is milliseconds (0.001 s a sample), "
                                 "not seconds; give time in seconds (divide the column by 1000)"),
    (["check", "model", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_us.csv"],
     "steps by 1000 per sample: that is microseconds (0.001 s a sample)"),
    (["identify", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_ok.csv", "--validate", "{tmp}/log_nan.csv",
      "--fit", "delay"], "is nan"),
    (["identify", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_ok.csv", "--fit", "joint:elbw:damping"],
     "no joint 'elbw' in identify_arm.xml (did you mean 'elbow'?)"),
    (["identify", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_ok.csv", "--fit", "joint:elbow:mass"],
     "a joint has damping, armature, frictionloss, stiffness"),
    (["identify", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_ok.csv", "--fit", "link2:mass"], "expected one of"),
    (["identify", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_ok.csv", "--fit", "delay", "--window", "0"],
     "--window"),
    (["identify", "--mjcf", "{tmp}/malformed.xml", "--log", "{tmp}/log_ok.csv", "--fit", "delay"], "cannot compile"),
    (["check", "model", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_misspelt.csv"], "did you mean 'elbow'?"),
    (["check", "model", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_time_back.csv"], "time is not increasing"),
    # (30 samples: too few to estimate a noise, so it is stated)
    (["check", "model", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_diverges.csv", "--noise", "qpos:*=1e-3"],
     "huge value in CTRL"),
    ([*identify_log("log_diverges.csv"), "--noise", "qpos:*=1e-3"], "is the log this model's robot"),
    (["check", "model", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_no_elbow_command.csv", "--noise", "qpos:*=1e-3"],
     "no ctrl:elbow_motor column"),
    (["check", "model", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_ok.csv", "--noise", "qpos:*=1e-3", "--start",
      "stand"], "--start stand: the model has no such keyframe"),
    (["check", "model", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_ok.csv", "--commands", "cubic"],
     "invalid choice: 'cubic'"),
    (["check", "model", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_ok.csv", "--self-test", "1e999"],
     "--self-test"),
    (["check", "model", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_ok.csv", "--seed", "-1"], "--seed"),
    (["identify", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_ok.csv", "--fit", "delay", "--self-test", "0"],
     "--self-test"),
    (["margins", "cart-pole-lqr", "--from", "{tmp}/no_such_file.py"], "no_such_file.py"),
    (["check", "model", "--mjcf", IDENTIFY_ARM, "--log", "{tmp}/log_ok.csv", "--tolerance", "0.5"], "--tolerance"),
    (["excite", "--mjcf", IDENTIFY_ARM, "--duration", "0", "--out", "{tmp}/excite_out/cmd.csv"], "--duration"),
    (["excite", "--mjcf", IDENTIFY_ARM, "--duration", "nan", "--out", "{tmp}/excite_out/cmd.csv"], "finite"),
    (["excite", "--mjcf", IDENTIFY_ARM, "--duration", "1", "--out", "{tmp}/excite_out/cmd.txt"], ".csv or .npz"),
    (["excite", "--mjcf", IDENTIFY_ARM, "--duration", "1", "--out", "{tmp}/excite_out/cmd.csv", "--fit", "joint:x:y"],
     "a joint has damping"),
    (["excite", "--mjcf", "{tmp}/three_joints.xml", "--duration", "1", "--out", "{tmp}/excite_out/cmd.csv"],
     "has no actuators"),
]


# The Python API refuses what the command line refuses, with the same sentences
# (crossdyn.experiments.core.validate): (options of check_mass_matrix, error, phrase).
API_CASES = [
    ({"atol": float("inf")}, "ParameterError", "atol must be a finite number, got inf"),  # once PASSED
    ({"atol": float("nan")}, "ParameterError", "atol must be a finite number, got nan"),  # once a MISMATCH
    ({"atol": -1}, "ParameterError", "atol must be in [0, 1e+06], got -1"),
    ({"rtol": 2.0}, "ParameterError", "rtol must be in [0, 1], got 2"),
    ({"rtol": "1e-9"}, "ParameterError", "rtol must be a number"),
    ({"seed": -1}, "ParameterError", "seed must be a whole number from 0 to 4294967295, got -1"),
    ({"seed": 10**20}, "ParameterError", "seed must be a whole number from 0 to"),
    ({"seed": 1.5}, "ParameterError", "seed must be a whole number"),
    ({"samples": 0}, "ParameterError", "samples must be from 1"),
    ({"q_range": (1.0, -1.0)}, "ParameterError", "q_range needs LOW < HIGH"),
    ({"q_range": float("nan")}, "ParameterError", "q_range must be finite"),
    ({"slide_range": 1e9}, "ParameterError", "slide_range must lie within"),
    ({"states": np.zeros((0, 7))}, "StateError", "the states have no rows"),  # once numpy's bare ValueError
    ({"dynamics": "soft"}, "ParameterError", "unknown dynamics 'soft'; choose from"),
]


@pytest.mark.parametrize("options, error, phrase", API_CASES, ids=[str(o)[:40] for o, _, _ in API_CASES])
def test_the_python_api_refuses_what_the_command_line_refuses(options, error, phrase):
    """check_mass_matrix and assert_mass_matrix: a crossdyn error naming the option, never a verdict."""
    from crossdyn import check_mass_matrix
    from crossdyn.experiments.core import errors
    from crossdyn.testing import assert_mass_matrix

    def wrong(q):  # off by 1 on the diagonal: a mismatch under any sane tolerance
        return np.eye(7) * 0.0

    for check in (check_mass_matrix, assert_mass_matrix):
        with pytest.raises(getattr(errors, error)) as raised:
            check(wrong, ARM, **{"samples": 5, **options})
        assert phrase in str(raised.value), raised.value


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bad")
    for name, text in BAD_FILES.items():
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(text)
    for name, array in BAD_ARRAYS.items():
        np.save(folder / name, array)
    for name, arrays in BAD_ARCHIVES.items():
        np.savez(folder / name, **arrays)
    for name, data in DAMAGED_ARCHIVES.items():
        (folder / name).write_bytes(data)
    for name in BAD_FOLDERS:
        (folder / name).mkdir(parents=True)
    return folder


def _run_main(args, capsys) -> tuple[int | str | None, str]:
    try:
        code: int | str | None = main(args)
    except SystemExit as exc:  # argparse's errors
        code = exc.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("args, phrase", CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_bad_input_is_one_line_and_exit_2(args, phrase, bad_files, tmp_path, capsys):
    args = [a.format(tmp=bad_files) for a in args]
    if "--out" not in args and args[0] != "list":  # list writes nothing
        args += ["--out", str(tmp_path / "out")]
    code, err = _run_main(args, capsys)
    lines = err.strip().splitlines()
    assert code == 2, f"exit {code}: {err}"
    assert len(lines) == 1, err
    assert "Traceback" not in err and phrase in lines[0], lines[0]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*")), "refused input wrote output"


@pytest.mark.parametrize("args", [
    ["tune", "cart-pole-lqr", "--vary", "r=0.1:1", "--samples", "1"],
    [*TUNE, "--samples", "2", "--set", "duration_s=1"],
    [*TUNE, "--search", "optuna", "--trials", "2", "--set", "duration_s=1"],
    [*MAP, "--vary", "body_mass_scale=1", "--vary", "com_offset_x=0", "--search", "grid", "--set", "duration_s=1"],
], ids=lambda args: " ".join(args[:4]))
def test_a_tune_into_an_out_another_holds_is_refused(args, tmp_path, capsys):
    """Two tunes into one --out at once would lose one's rows: while one holds it, the other is one line, exit 2."""
    from crossdyn.experiments.core.sweep import table

    out = tmp_path / "out"
    with table.locked(out):
        code, err = _run_main([*args, "--workers", "1", "--no-progress", "--out", str(out)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{out} is in use by another tune still writing there" in err, err
    assert not any(out.iterdir())


def test_nothing_chosen_sweep_is_one_line(tmp_path, capsys):
    """--set-from a tune whose best.json chose nothing (every run failed)."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "best.json").write_text(json.dumps({"best": None, "defaults": {}}))
    code, err = _run_main([*MAP, "--set-from", str(sweep), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "that tune chose no run" in err and "NoneType" not in err, err


def test_mujoco_warning_stays_off_the_terminal(bad_files, tmp_path):
    """MuJoCo prints its own WARNING line for a NaN; crossdyn's one line replaces it (and no MUJOCO_LOG.TXT)."""
    out = subprocess.run([sys.executable, "-m", "crossdyn.experiments", "check", "two-link", "--mjcf",
                          str(bad_files / "nan_mass.xml"), "--out", str(tmp_path / "out")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "MPLBACKEND": "Agg"})
    assert out.returncode == 2
    assert out.stdout == "" and len(out.stderr.strip().splitlines()) == 1 and "NaN" in out.stderr, out
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()


def test_the_table_reaches_every_command():
    """Every command and subcommand of the CLI has at least one bad-input row."""
    commands = {" ".join(a[:2]) if a[0] == "check" else a[0] for a, _ in CASES}
    assert commands >= {"check two-link", "check derivation", "check kinematics", "check jacobian",
                        "check mass-matrix", "check bias", "check energy", "check forward-dynamics",
                        "check linearization", "run", "list", "tune", "identify", "check model", "excite"}, commands
    assert {a[1] for a, _ in CASES if a[0] == "tune"} >= {"biped-balance-tune", "biped-robustness-map"}
    assert len(CASES) >= 40


# The Python API's bad input (issue 36): (id, call, phrase its one-line crossdyn error must contain).
FLOATING = str(Path(__file__).parent / "models" / "floating_base.xml")
ZERO_QUATERNION = [0.0, 0.0, 0.45, 0.0, 0.0, 0.0, 0.0, *[0.0] * 6]  # the floating base's qpos, quaternion zeroed


def _simulate(controller=lambda t, obs: np.zeros(1), duration=0.1, model="cart_pole", **kwargs):
    from crossdyn.experiments.core.loop.simulate import simulate

    return simulate(model, controller, duration, **kwargs)


def _linearize(model="cart_pole", **kwargs):
    from crossdyn.experiments.core.linearize import linearize

    return linearize(model, **kwargs)


def _delayed(periods: int) -> list:
    from crossdyn.experiments.core.imperfections import Delay

    return [Delay(periods)]


def _tune(**kwargs):
    import tempfile

    from crossdyn.experiments.core.sweep.experiment import tune

    with tempfile.TemporaryDirectory() as folder:
        return tune("cart-pole-lqr", Path(folder) / "out", vary=["r=0.1:1"], samples=1, short=True, **kwargs)


def _push(body: str):
    from crossdyn.experiments.core.imperfections import Push

    return Push(body, (1.0, 0.0, 0.0), 0.0, 0.01)


LOOP_API_CASES = [
    ("simulate complex control", lambda: _simulate(lambda t, obs: np.array([1 + 1j])),
     "controller returned a complex control at control step 0 (t = 0 s)"),
    ("simulate complex control by name", lambda: _simulate(lambda t, obs: {"push": 2j}),
     "controller returned 2j for actuator 'push' at control step 0 (t = 0 s); expected a number"),
    ("simulate None returned", lambda: _simulate(lambda t, obs: None),
     "controller returned None at control step 0 (t = 0 s)"),
    ("simulate seed -1", lambda: _simulate(seed=-1), "seed must be a whole number from 0 to 4294967295, got -1"),
    ("simulate 20-digit seed", lambda: _simulate(seed=10**19), "got 10000000000000000000"),
    ("simulate float seed", lambda: _simulate(seed=1.5), "seed must be a whole number"),
    ("simulate delay longer than the run", lambda: _simulate(duration=0.01, imperfections=_delayed(10**8)),
     "no command would reach the actuators"),
    ("simulate delay as long as the run", lambda: _simulate(duration=0.01, imperfections=_delayed(5)),
     "Delay(5) holds commands 0.01 s, at least the whole run (5 control periods of 0.002 s)"),
    ("simulate zero quaternion", lambda: _simulate(lambda t, obs: np.zeros(0), model=FLOATING, qpos=ZERO_QUATERNION),
     "the quaternion of joint 'root', is all zero"),
    # finite controls MuJoCo refuses: said as such, not as the function's NaN
    ("simulate controls summing past 1e308", lambda: _simulate(lambda t, obs: np.array([1e308, 1e308]),
                                                               model="two_link_arm"),
     "a control beyond MuJoCo's limit |ctrl| <= 1e+10 reached the actuators at control step 0 (t = 0 s)"),
    ("simulate a control past MuJoCo's limit", lambda: _simulate(lambda t, obs: np.array([1e200, 0.0]),
                                                                 model="two_link_arm"),
     "[1e+200, 0.0] (MuJoCo zeroes such a control)"),
    ("simulate push on a missing body", lambda: _simulate(imperfections=[_push("ghost")]),
     "no body 'ghost' in the model (its bodies: world, cart, pole)"),
    ("tune seed -1", lambda: _tune(seed=-1), "seed must be a whole number from 0 to 4294967295, got -1"),
    ("tune minimize measured", lambda: _tune(minimize="measured"), "'measured' describes a run"),
    ("linearize eps 0", lambda: _linearize(eps=0), "eps must be a finite step in (0, 0.1], got 0"),
    ("linearize eps nan", lambda: _linearize(eps=float("nan")), "got nan"),
    ("linearize eps negative", lambda: _linearize(eps=-1e-6), "eps must be"),
    ("linearize eps huge", lambda: _linearize(eps=10.0), "eps must be"),
    ("linearize zero quaternion", lambda: _linearize(FLOATING, qpos=ZERO_QUATERNION),
     "qpos[3:7], the quaternion of joint 'root', is all zero"),
]


@pytest.mark.parametrize("call, phrase", [case[1:] for case in LOOP_API_CASES],
                         ids=[case[0] for case in LOOP_API_CASES])
def test_python_api_bad_input_is_one_crossdyn_error(call, phrase):
    """A crossdyn error of one line; a NumPy warning (a ComplexWarning dropping a part) is no answer."""
    import warnings

    from crossdyn.experiments.core.errors import CrossdynError

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CrossdynError) as info:
            call()
    message = str(info.value)
    assert phrase in message and "\n" not in message, message


def test_a_long_delay_is_not_allocated_up_front():
    """Delay(10**8) bound without a run length holds nothing yet (it once built its whole queue: 1.6 GB)."""
    import tracemalloc

    from crossdyn.experiments.core.imperfections import bind
    from crossdyn.experiments.core.models import load_model

    model = load_model("cart_pole")
    tracemalloc.start()
    try:
        bind(model, _delayed(10**8), 0.002, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000, peak  # bytes: the model copy and names, far below one queue of 10**8 entries


def _all_json_valid(folder: Path) -> list[Path]:
    """Every JSON file under ``folder`` parses (none is half-written); no temporary file is left."""
    files = sorted(folder.rglob("*.json"))
    for path in files:
        json.loads(path.read_text())
    assert not list(folder.rglob("*.tmp")), list(folder.rglob("*.tmp"))
    return files


def test_disk_full_is_one_line_and_what_was_written_stays_valid(tmp_path, capsys, monkeypatch):
    """ENOSPC on the second summary.json write (the OS names no file for it): exit 2, one line naming the file."""
    import errno

    from crossdyn.experiments.core import files

    writes = []

    class Full:
        """A file whose write fails as a full disk does: OSError(ENOSPC) with no file name."""

        def __init__(self, file):
            self.file = file

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    def open_(path, mode="r", **kwargs):
        file = open(path, mode, **kwargs)  # noqa: SIM115 - returned to write_text's own with-block
        if "summary.json" in str(path):
            writes.append(path)
            if len(writes) == 2:
                return Full(file)
        return file

    monkeypatch.setattr(files, "open", open_, raising=False)  # every file is written by files.write_text
    out = tmp_path / "out"
    code, err = _run_main(["run", "two-link-lagrange", "rnea-two-link-arm", "--short", "--out", str(out)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0] == f"crossdyn: error: {out / 'summary.json'}: No space left on device", lines[0]
    files = _all_json_valid(out)
    assert out / "summary.json" in files  # the first experiment's summary, whole
    assert [row["name"] for row in json.loads((out / "summary.json").read_text())] == ["two-link-lagrange"]


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MB tmpfs at tmp_path/small (needs root and mount; skipped elsewhere)."""
    folder = tmp_path / "small"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_real_full_disk_is_one_line_exit_2(small_disk, tmp_path):
    """Experiments whose plots fill a 2 MB disk: one line, exit 2, every JSON file written stays whole."""
    (small_disk / "ballast").write_bytes(b"\0" * 1_900_000)  # leave ~100 KB: the first plots fill it
    run = subprocess.run([sys.executable, "-m", "crossdyn.experiments", "run", "two-link-lagrange",
                          "rnea-two-link-arm", "two-link-scope", "--short", "--out", str(small_disk / "out")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "MPLBACKEND": "Agg"})
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert "No space left on device" in lines[0], lines[0]
    _all_json_valid(small_disk / "out")


@pytest.fixture
def tcp_service():
    """A local TCP service that is not Dask: ``silent`` accepts and says nothing; ``http`` answers like a web server."""
    import socket
    import threading

    servers = []

    def start(mode: str) -> str:
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen()
        servers.append(server)

        def serve():
            held = []
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                held.append(conn)
                if mode == "http":
                    conn.recv(100)
                    conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")

        threading.Thread(target=serve, daemon=True).start()
        return f"tcp://127.0.0.1:{server.getsockname()[1]}"

    yield start
    for server in servers:
        server.close()


@pytest.mark.parametrize("mode, phrase", [("silent", "no Dask scheduler answered"),
                                          ("http", "does not answer as a Dask scheduler")])
def test_a_scheduler_address_that_is_not_dask_is_one_line(mode, phrase, tcp_service, tmp_path, capsys, monkeypatch):
    """A TCP service that is not Dask: one line within the connect timeout, no Client.__del__ traceback."""
    pytest.importorskip("distributed")
    import time

    from crossdyn.experiments.core import dask_client

    monkeypatch.setattr(dask_client, "CONNECT_TIMEOUT_S", 2.0)
    monkeypatch.setattr("crossdyn.experiments.core.sweep.engine.CONNECT_TIMEOUT", "2s")
    start = time.monotonic()
    code, err = _run_main([*TUNE, "--samples", "2", "--no-progress", "--scheduler", tcp_service(mode),
                           "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and phrase in err, err
    assert time.monotonic() - start < 60  # bounded: 2 s to answer, plus start-up


def test_a_scheduler_with_no_workers_is_one_line(tmp_path, capsys, monkeypatch):
    distributed = pytest.importorskip("distributed")
    from crossdyn.experiments.core import dask_client

    monkeypatch.setattr(dask_client, "WORKERS_TIMEOUT_S", 2.0)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None, protocol="tcp://",
                                  scheduler_port=0) as cluster:
        code, err = _run_main([*TUNE, "--samples", "2", "--no-progress", "--scheduler",
                               cluster.scheduler_address, "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "has no workers (waited 2 s)" in err and "dask worker tcp://" in err, err
