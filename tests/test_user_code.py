"""User code cannot fake a verdict: each way out of a derivation file is exit 2 with one line.

Every case runs the real command in a subprocess (``python -m crossdyn.experiments``),
because ``sys.exit(0)`` inside the user's file must not end crossdyn with exit 0
and no report, which CI would read as a pass.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

# name -> (derivation file text, phrase of the one-line error).  Each defines `tau`.
CASES = {
    "exit-at-import": ("import sys\nsys.exit(0)\ndef tau(q, qd, qdd):\n    return [0.0, 0.0]\n",
                       "(while being imported) called sys.exit(0)"),
    "exit-in-function": ("import sys\ndef tau(q, qd, qdd):\n    sys.exit(0)\n", "tau called sys.exit(0)"),
    "exit-only-on-a-batch": ("import sys\nimport numpy as np\ndef tau(q, qd, qdd):\n"
                             "    if np.ndim(q) == 2:\n        sys.exit(0)\n    return np.zeros(2)\n",
                             "tau called sys.exit(0)"),
    "returns-str": ("def tau(q, qd, qdd):\n    return 'torques'\n", "returned a str"),
    "returns-dict": ("def tau(q, qd, qdd):\n    return {'q1': 0.0, 'q2': 0.0}\n", "returned a dict"),
    "returns-generator": ("def tau(q, qd, qdd):\n    return (x for x in q)\n", "returned a generator"),
    "returns-bytes": ("def tau(q, qd, qdd):\n    return b'00'\n", "returned a bytes"),
    "returns-object-array": ("import numpy as np\ndef tau(q, qd, qdd):\n"
                             "    return np.array([object(), object()], dtype=object)\n",
                             "returned an array of Python objects"),
    "returns-complex": ("import numpy as np\ndef tau(q, qd, qdd):\n    return np.zeros(2) + 1e-3j\n",
                        "returned complex numbers (largest imaginary part 0.001)"),
    "returns-none": ("def tau(q, qd, qdd):\n    pass\n", "returned a NoneType"),
    "returns-strings": ("def tau(q, qd, qdd):\n    return ['1', '2']\n", "returned an array of strings"),
    "raises-keyboard-interrupt": ("def tau(q, qd, qdd):\n    raise KeyboardInterrupt\n",
                                  "tau raised KeyboardInterrupt itself (no Ctrl-C was pressed)"),
    "keyboard-interrupt-at-import": ("raise KeyboardInterrupt\n", "raised KeyboardInterrupt itself"),
}


def _crossdyn(args, cwd, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "crossdyn.experiments", *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "MPLBACKEND": "Agg"}, **kwargs)


@pytest.mark.parametrize("case", list(CASES))
def test_user_code_gets_one_line_and_exit_2(case, tmp_path):
    text, phrase = CASES[case]
    (tmp_path / "user.py").write_text(text)
    proc = _crossdyn(["check", "derivation", "user.py:tau", "--mjcf", "two_link_arm", "--samples", "5",
                      "--out", str(tmp_path / "out")], tmp_path)
    out, err = proc.communicate(timeout=120)
    lines = err.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, out, err)
    assert len(lines) == 1 and "Traceback" not in err and phrase in lines[0], err
    assert out == ""  # no report, and no verdict either


def test_helper_module_beside_the_file_imports(tmp_path):
    """As `python user.py` would: the file's folder is on sys.path, wherever crossdyn runs from."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "my_helpers.py").write_text("import numpy as np\ndef zeros(n):\n    return np.zeros(n)\n")
    (folder / "user.py").write_text("import my_helpers\ndef tau(q, qd, qdd):\n    return my_helpers.zeros(2)\n")
    proc = _crossdyn(["check", "derivation", str(folder / "user.py") + ":tau", "--mjcf", "two_link_arm",
                      "--samples", "5", "--out", str(tmp_path / "out")], tmp_path)
    out, err = proc.communicate(timeout=120)
    # Zero torques are wrong (exit 1), but the file imported and was checked.
    assert proc.returncode == 1 and out.startswith("MISMATCH") and err == "", (out, err)


def test_a_long_check_leaves_stderr_clean(tmp_path):
    """Over PROGRESS_STATES the worker makes a tqdm bar; its lock must not leak a semaphore.

    tqdm's default lock holds a multiprocessing semaphore, and a worker ends with
    ``os._exit``, so the resource tracker used to print a "leaked semaphore"
    warning after every long check.
    """
    from crossdyn.experiments.core.checks.common import PROGRESS_STATES

    (tmp_path / "user.py").write_text("import numpy as np\ndef tau(q, qd, qdd):\n    return np.zeros(np.shape(q))\n")
    proc = _crossdyn(["check", "derivation", "user.py:tau", "--mjcf", "two_link_arm",
                      "--samples", str(2 * PROGRESS_STATES), "--out", str(tmp_path / "out")], tmp_path)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and out.startswith("MISMATCH") and err == "", (out, err)


def test_real_ctrl_c_is_still_an_interrupt(tmp_path):
    """A Ctrl-C while the user's code runs is the user's Ctrl-C (130), not their code's fault (2)."""
    marker = tmp_path / "running"
    (tmp_path / "slow.py").write_text(
        "import time\nfrom pathlib import Path\nimport numpy as np\n"
        f"def tau(q, qd, qdd):\n    Path({str(marker)!r}).touch()\n    time.sleep(0.01)\n"
        "    assert np.ndim(q) == 1, 'one state at a time'\n"
        "    return np.zeros(np.shape(q))\n")
    # Written for one state, the function is called 100,000 times at 10 ms each, so the run
    # is certainly still going when the signal arrives (a batched function would finish the
    # whole check in about a second, and on a loaded machine before the signal was sent).
    proc = _crossdyn(["check", "derivation", "slow.py:tau", "--mjcf", "two_link_arm", "--samples", "100000",
                      "--out", str(tmp_path / "out")], tmp_path,
                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as in a terminal
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, (proc.returncode, err)
