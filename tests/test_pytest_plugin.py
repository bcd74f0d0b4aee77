"""crossdyn in a user's own pytest suite: ``crossdyn.testing`` and the pytest plugin.

- The assertion helpers, in this process: ``assert_derivation`` passes a correct
  derivation and fails a wrong one with the report's attribution (term, entry, by
  how much, and the explanation when there is one); bad input stays the one-line
  ``CrossdynError``; helpers exist exactly for the checks the short API has; no
  pytest needed.
- The baseline fixture's rules, on its class with the file in a scratch folder:
  tolerances as ``--baseline``'s, booleans and strings exactly, new and missing
  metrics, NumPy values, regeneration that leaves an unchanged file alone.
- A user's project outside crossdyn (its own ``pytest.ini`` and ``tests/``), run
  with ``python -m pytest`` in fresh interpreters as the user would: a wrong
  derivation and a drifted metric fail naming their cause; ``--crossdyn-from``
  collects, selects (``-k``) and judges a user's experiments (a crash or a bad
  return is an error, never a pass) with the same metrics serially, with
  ``--crossdyn-workers`` and with pytest-xdist; the plugin is inert for a suite
  that does not use it; bad input is a clear failure, never an internal error.
  (The missing -> ``--crossdyn-regen`` -> pass cycle of the pytest guide's example is
  tests/test_guides.py's.)
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import crossdyn as api
import crossdyn.testing as testing
from crossdyn.analytic.two_link import lagrange
from crossdyn.experiments.core.errors import CrossdynError, DerivationError
from crossdyn.experiments.two_link import two_link_params
from crossdyn.testing import assert_derivation
from crossdyn.testing.baseline_fixture import Baseline, flatten
from support import code_blocks, doc_section

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
MODEL = api.load_model("two_link_arm")
P = two_link_params(MODEL)
SAMPLES = 50  # a missing link inertia is 1e-4 kg m^2 against 1e-9 round-off: 50 states are plenty


def _section_block(page: str, title: str, lang: str = "python") -> str:
    return code_blocks(doc_section(page, title), lang)[0]


# --- assertion helpers, in this process -------------------------------------------------------------------------


def test_assert_derivation_passes_a_correct_one_and_returns_its_report():
    report = assert_derivation(lambda q, qd, qdd: lagrange(P, q, qd, qdd), MODEL, samples=SAMPLES)
    assert report.passed and report.samples == SAMPLES


def test_assert_derivation_fails_a_wrong_one_with_its_attribution():
    no_link_inertia = dataclasses.replace(P, i1=0.0, i2=0.0)
    with pytest.raises(AssertionError) as caught:
        assert_derivation(lambda q, qd, qdd: lagrange(no_link_inertia, q, qd, qdd), MODEL, samples=SAMPLES)
    message = str(caught.value)
    report = api.check_derivation(lambda q, qd, qdd: lagrange(no_link_inertia, q, qd, qdd), MODEL, samples=SAMPLES)
    assert message.splitlines()[0] == report.diagnosis  # the report's own words, term, entry and size
    assert "mass matrix off by up to" in message and "on entry M[0,0] (q1, q1) (a constant offset)" in message
    assert "velocity terms and gravity agree" in message
    # ... and what the error is: both links' own inertia, named by body (the inertial-parameter fit).
    assert message.splitlines()[1:] == report.parameters and len(report.parameters) == 2
    assert "body 'link1': inertia about the centre of mass Izz 0 where the model has" in message


def test_assert_derivation_message_carries_the_explanation():
    """A mismatch that is one of the model's passive effects: the explanation's sentences follow the diagnosis."""
    passive = api.load_model(HERE / "models" / "passive_arm.xml")
    with pytest.raises(AssertionError) as caught:
        assert_derivation(f"{HERE / 'derivations' / 'passive_arm.py'}:omits_damping", passive, dynamics="as-modeled",
                          samples=100, seed=2)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("velocity terms off by up to"), lines
    assert "damping force b qd" in lines[1] and "joint 'shoulder' (0.4)" in lines[1], lines
    assert lines[2].startswith("the derivation leaves out damping"), lines


@pytest.mark.parametrize("derivation, phrase", [
    ("no_such_file.py:tau", "no derivation file"),
    (lambda q, qd, qdd: "torques", "returned a str"),
    (lambda q, qd, qdd: 1 / 0, "raised ZeroDivisionError"),
])
def test_assert_derivation_bad_input_is_the_one_line_error(derivation, phrase):
    """Bad input is not a mismatch: the CrossdynError itself, one line, never an AssertionError."""
    with pytest.raises(DerivationError) as caught:
        assert_derivation(derivation, MODEL, samples=SAMPLES)
    assert phrase in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


@dataclasses.dataclass
class _FakeReport:
    passed: object
    diagnosis: str = "jacobian of site 'tip' off by up to 2.0e-03 on entry J[1,0] (q1)"
    explanation: tuple = ("link 1 is 2 mm too long",)


def test_a_helper_exists_exactly_when_its_check_does(monkeypatch):
    """Helpers come from the table of (helper, check) as the short API gains checks; none without its check."""
    assert set(testing.HELPERS) >= {"assert_derivation", "assert_jacobian", "assert_mass_matrix", "assert_kinematics",
                                    "assert_bias", "assert_energy", "assert_forward_dynamics", "assert_linearization"}
    for helper, check in testing.HELPERS.items():  # on any branch: present iff the check is
        assert (helper in dir(testing)) == (check in dir(api)), helper
    monkeypatch.setitem(testing.HELPERS, "assert_wobble", "check_wobble")
    with pytest.raises(AttributeError, match="needs crossdyn.check_wobble"):
        testing.assert_wobble  # noqa: B018

    def check_wobble(*args, **options):  # runs in the helper's child process: what it was given comes back
        report = _FakeReport(passed=options.get("result"))
        report.call = (args, options)
        return report

    monkeypatch.setattr(api, "check_wobble", check_wobble, raising=False)
    try:
        helper = testing.assert_wobble
        assert "assert_wobble" in dir(testing) and helper.__name__ == "assert_wobble"
        report = helper("arm.xml", result=True)
        assert report.passed is True and report.call == (("arm.xml",), {"result": True})
        with pytest.raises(AssertionError) as caught:
            helper("arm.xml", result=np.bool_(False))
        assert str(caught.value) == ("jacobian of site 'tip' off by up to 2.0e-03 on entry J[1,0] (q1)\n"
                                     "link 1 is 2 mm too long")
        with pytest.raises(TypeError, match="expected True or False"):  # a truthy non-bool is never a pass
            helper("arm.xml", result="yes")
    finally:
        vars(testing).pop("assert_wobble", None)


def test_helpers_work_without_pytest():
    """A plain script: no pytest imported, an AssertionError with the diagnosis; importing loads no MuJoCo."""
    code = ("import sys, dataclasses\n"
            "import crossdyn.testing as t\n"
            "print('mujoco' in sys.modules, 'numpy' in sys.modules)\n"
            "from crossdyn.analytic.two_link import lagrange\n"
            "from crossdyn import load_model\n"
            "from crossdyn.experiments.two_link import two_link_params\n"
            "m = load_model('two_link_arm'); p = dataclasses.replace(two_link_params(m), i1=0.0)\n"
            "try:\n"
            "    t.assert_derivation(lambda q, qd, qdd: lagrange(p, q, qd, qdd), m, samples=20)\n"
            "except AssertionError as e:\n"
            "    print(str(e).split(';')[0])\n"
            "print('pytest' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["False False", "mass matrix off by up to 7.092e-04 on entry M[0,0] (q1, q1) "
                                       "(a constant offset)", "False"], out.stdout


# --- the baseline fixture's rules ---------------------------------------------------------------------------------


@pytest.fixture
def baseline(request, tmp_path):
    """A fixture object for this test, its file moved to a scratch folder."""

    def make(regen=False):
        b = Baseline(request.node, regen=regen, root=tmp_path, written=[])
        b.path = tmp_path / "tests" / "test_x" / "test_name.json"
        return b

    return make


METRICS = {"settle_s": 0.297, "overshoot": np.float32(6.25), "converged": True, "mode": "lqr", "nothing": None,
           "per_joint": [{"name": "q1", "err": 1e-15}, {"name": "q2", "err": np.float64(2e-15)}],
           "q": np.array([0.1, -0.2]), "count": np.int64(3)}


def test_flatten_names_metrics_as_save_baseline_does():
    assert flatten(METRICS | {"passed": False, "error": 0.5}) == {  # run-description names are metrics here
        "converged": True, "count": 3.0, "error": 0.5, "mode": "lqr", "nothing": None, "overshoot": 6.25,
        "passed": False, "per_joint[q1].err": 1e-15, "per_joint[q2].err": 2e-15, "q[0]": 0.1, "q[1]": -0.2,
        "settle_s": 0.297}


def test_baseline_missing_then_written_then_compared(baseline):
    with pytest.raises(AssertionError, match=r"no crossdyn baseline .*test_name.json .*pytest --crossdyn-regen"):
        baseline().check(METRICS)
    writer = baseline(regen=True)
    writer.check(METRICS)
    assert writer.written == [f"{writer.path.relative_to(writer.root).as_posix()} (new)"]
    text = writer.path.read_text()
    assert json.loads(text)["metrics"]["per_joint[q2].err"] == 2e-15 and text.count("\n") == 15  # one per line
    baseline().check(METRICS)  # the same values pass
    again = baseline(regen=True)
    mtime = again.path.stat().st_mtime_ns
    again.check(METRICS)  # unchanged: left alone, not listed
    assert again.written == [] and again.path.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("change, tolerances, lines", [
    # default tolerance: 1e-9 + 1e-6 |0.297| ~ 3e-7 s
    ({"settle_s": 0.297 + 2e-7}, None, []),
    ({"settle_s": 0.297 + 4e-7}, None, ["drifted settle_s: baseline 0.297, now 0.2970004, change +0.000135 % "
                                        "(tolerance rel 1e-06 + abs 1e-09)"]),
    ({"settle_s": 0.31}, {"settle_s": 0.05}, []),  # +4.4 % within a declared 5 %
    ({"settle_s": 0.31}, {"settle_s": api.Tolerance(rel=0.0, abs=0.01)},
     ["drifted settle_s: baseline 0.297, now 0.31, change +4.38 % (tolerance rel 0 + abs 0.01)"]),
    ({"converged": False}, None, ["changed converged: baseline True, now False (compared exactly)"]),
    ({"converged": 1}, None, ["changed converged: baseline True, now 1.0 (compared exactly)"]),
    ({"mode": "pid"}, None, ["changed mode: baseline 'lqr', now 'pid' (compared exactly)"]),
    ({"nothing": 0.0}, None, ["changed nothing: baseline None, now 0.0 (compared exactly)"]),
    ({"q": np.array([0.1, -0.2, 0.3])}, None, ["new metric q[2] = 0.3 (not in the baseline)"]),
    ({"per_joint": [{"name": "q1", "err": 1e-15}]}, None,
     ["missing metric per_joint[q2].err (baseline 2e-15; not in this check)"]),
    ({"settle_s": float("nan")}, None, ["drifted settle_s: baseline 0.297, now nan, change to nan "
                                        "(tolerance rel 1e-06 + abs 1e-09)"]),  # no "change changed"
])
def test_baseline_drift_names_metric_values_and_tolerance(baseline, change, tolerances, lines):
    baseline(regen=True).check(METRICS)
    if not lines:
        baseline().check(METRICS | change, tolerances)
        return
    with pytest.raises(AssertionError) as caught:
        baseline().check(METRICS | change, tolerances)
    message = str(caught.value).splitlines()
    assert message[0].endswith(f"{len(lines)} of {len(flatten(METRICS | change) | flatten(METRICS))} metrics differ")
    assert [line.strip() for line in message[1:-1]] == lines
    assert "--crossdyn-regen" in message[-1]


def test_baseline_nan_matches_only_nan(baseline):
    baseline(regen=True).check({"x": float("nan"), "y": float("inf")})
    baseline().check({"x": np.nan, "y": np.inf})
    with pytest.raises(AssertionError, match="drifted y: baseline inf, now -inf"):
        baseline().check({"x": np.nan, "y": -np.inf})


def test_a_baselines_type_is_part_of_the_comparison(baseline):
    """The number inf is stored as a number (JSON's Infinity); a file holding the text "inf" where the test
    now measures the number inf fails (once they were one stored value, and it passed)."""
    b = baseline(regen=True)
    b.check({"y": float("inf"), "z": float("nan"), "w": "fell"})
    text = b.path.read_text()
    assert '"y": Infinity' in text and '"z": NaN' in text and '"w": "fell"' in text
    baseline().check({"y": np.inf, "z": np.nan, "w": "fell"})
    b.path.write_text(json.dumps({"test": b.node.nodeid, "metrics": {"y": "inf", "z": "nan", "w": "fell"}}))
    with pytest.raises(AssertionError, match=r"changed y: baseline 'inf', now inf \(compared exactly\) \(a number "
                                             r"stored as text"):
        baseline().check({"y": np.inf, "z": np.nan, "w": "fell"})


@pytest.mark.parametrize("metrics, tolerances, error, phrase", [
    ([1.0], None, TypeError, "takes a dict of metrics, got list"),
    ({"a": object()}, None, TypeError, "metric 'a' is a object"),
    ({"a": {"b": 1 + 2j}}, None, TypeError, "metric 'a.b' is a complex"),
    ({"a": 1.0}, {"b": 0.1}, ValueError, "tolerance given for 'b', which is not among the metrics (a)"),
    ({"a": 1.0}, {"a": -0.1}, CrossdynError, "tolerance of metric 'a'"),
    # stored, the text "inf" and the number inf are one value: a change between them would pass
    ({"a": "inf"}, None, CrossdynError, "metric 'a' is the text 'inf', which a stored baseline cannot tell from"),
    ({"a": {"b": ["-inf"]}}, None, CrossdynError, "metric 'a.b[0]' is the text '-inf'"),
    ({"a": [{"name": "nan", "v": "nan"}]}, None, CrossdynError, "metric 'a[0].v' is the text 'nan'"),
])
def test_baseline_malformed_metrics_are_named(baseline, metrics, tolerances, error, phrase):
    with pytest.raises(error, match=re.escape(phrase)):
        baseline(regen=True).check(metrics, tolerances)


def test_baseline_checked_twice_in_one_test_is_refused(baseline):
    b = baseline(regen=True)
    b.check({"a": 1.0})
    with pytest.raises(RuntimeError, match="called twice"):
        b.check({"a": 2.0})


def test_baseline_file_names_stay_in_the_test_files_folder():
    """Parameter ids with separators, quotes or dots cannot lead the file out of tests/test_x/."""
    from crossdyn.testing.baseline_fixture import baseline_file

    test_file = Path("tests/test_x.py")
    for name in ("test_a[../../etc/passwd]", "test_a[a/b\\c:d e'f]", "test_" + "x" * 300):
        path = baseline_file(test_file, name)
        assert path.parent == Path("tests/test_x") and len(path.name) <= 125, path
    assert re.fullmatch(r"test_a\[\.\.%2F\.\.%2Fetc%2Fpasswd\]-[0-9a-f]{12}\.json",
                        baseline_file(test_file, "test_a[../../etc/passwd]").name)
    assert re.fullmatch(r"TestArm\.test_a\[1\.5-x\]-[0-9a-f]{12}\.json",
                        baseline_file(test_file, "test_a[1.5-x]", "TestArm").name)
    assert baseline_file(test_file, "test_swing[1.5-x]").name == "test_swing[1.5-x].json"  # plain: as it is
    long = baseline_file(test_file, "test_" + "x" * 300)
    assert long != baseline_file(test_file, "test_" + "x" * 301) and long.stem.startswith("test_xxx")


def test_baseline_file_names_never_collide():
    """Ids that differ only in characters a file name cannot hold, or in an outer class, keep their own files."""
    from crossdyn.testing.baseline_fixture import baseline_file

    test_file = Path("tests/test_x.py")
    names = [baseline_file(test_file, f"test_a[{id_}]") for id_ in ("a/b", "a_b", "a b", "a%2Fb", "a%b", "a\\b")]
    names += [baseline_file(test_file, "test_x", cls) for cls in ("TestA.Inner", "TestB.Inner", "Inner", None)]
    long = "test_" + "y" * 300
    names += [baseline_file(test_file, long, cls) for cls in ("TestA", "TestB")]
    # Names a case-insensitive disk (macOS's, Windows') cannot tell apart, and a plain name that ends as a
    # hashed one does.
    names += [baseline_file(test_file, f"test_a[{id_}]") for id_ in ("A", "a", "Ä", "ä")]
    names += [baseline_file(test_file, "test_x", cls) for cls in ("TestArm", "Testarm", "TESTARM")]
    hashed = baseline_file(test_file, "test_a[a b]").stem
    names += [baseline_file(test_file, hashed)]
    assert len({name.name.casefold() for name in names}) == len(names), names


def test_nested_classes_keep_their_own_baselines(tmp_path):
    """TestA::TestIn::test_x and TestB::TestIn::test_x, regenerated, then both pass (they once shared a file)."""
    bare_project(tmp_path, "test_nest.py",
        "class TestA:\n    class TestIn:\n        def test_x(self, crossdyn_baseline):\n"
        "            crossdyn_baseline.check({'v': 1.0})\n\n"
        "class TestB:\n    class TestIn:\n        def test_x(self, crossdyn_baseline):\n"
        "            crossdyn_baseline.check({'v': 2.0})\n\n"
        "import pytest\n\n@pytest.mark.parametrize('p', ['a/b', 'a_b', 'a b'])\n"
        "def test_p(p, crossdyn_baseline):\n    crossdyn_baseline.check({'p': p})\n")
    assert pytest_in(tmp_path, "--crossdyn-regen").returncode == 0
    run = pytest_in(tmp_path)
    assert run.returncode == 0 and "5 passed" in run.out, run.out
    assert len(list((tmp_path / "test_nest").iterdir())) == 5


# --- a user's project, run as the user runs it ---------------------------------------------------------------------

# A user's experiments beside the guide's: one seeded, one that misses, and broken ones.
MORE_EXPERIMENTS = '''
import numpy as np
from crossdyn import experiment


@experiment("noisy-mean", summary="mean of seeded noise", expected="|mean| < 0.1")
def noisy_mean(ctx):
    draws = np.random.default_rng(ctx.seed).normal(size=2000 if ctx.short else 20000)
    return {"passed": bool(abs(draws.mean()) < 0.1), "measured": f"mean {draws.mean():.4f}",
            "mean": draws.mean(), "short": ctx.short}


@experiment("misses", summary="never meets it", expected="error below 1e-3")
def misses(ctx):
    return {"passed": False, "measured": "error 0.25", "error_max": 0.25}


@experiment("crashes", summary="raises", expected="-")
def crashes(ctx):
    raise RuntimeError("simulated crash")


@experiment("truthy-string", summary="passed is a string", expected="-")
def truthy_string(ctx):
    return {"passed": "yes", "measured": "looks fine"}


@experiment("no-verdict", summary="returns no passed/measured", expected="-")
def no_verdict(ctx):
    return {"value": 1.0}
'''


@pytest.fixture
def project(tmp_path) -> Path:
    """A user's project: pytest.ini, the guides' tests/test_arm.py and ci/experiments.py, and ci/more.py."""
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "ci").mkdir()
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    (root / "tests" / "test_arm.py").write_text(_section_block("docs/guides/pytest.md", "A derivation and a baseline"))
    (root / "ci" / "experiments.py").write_text(_section_block("docs/guides/regression-ci.md", "Your own experiments"))
    (root / "ci" / "more.py").write_text(MORE_EXPERIMENTS)
    return root


class PytestRun(subprocess.CompletedProcess):
    """A finished pytest run, with ``out``: its stdout and stderr together."""

    def __init__(self, done: subprocess.CompletedProcess):
        super().__init__(done.args, done.returncode, done.stdout, done.stderr)
        self.out: str = done.stdout + done.stderr


def bare_project(folder: Path, name: str, text: str) -> None:
    """A project of one file in ``folder``: ``name`` holding ``text``, beside an empty ``pytest.ini`` (the rootdir)."""
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / name).write_text(text)


def pytest_in(folder: Path, *args: str, env: dict | None = None) -> PytestRun:
    """``python -m pytest ARGS`` in a fresh interpreter from ``folder``; ``.out`` holds stdout and stderr."""
    done = PytestRun(subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *args],
                                    cwd=folder, capture_output=True, text=True, timeout=600,
                                    env={**os.environ, "MPLBACKEND": "Agg", **(env or {})}))
    assert "INTERNALERROR" not in done.out, done.out
    return done


def test_wrong_derivation_and_drift_fail_in_the_users_suite(project):
    """After a good run is kept, a code change fails both tests, each naming its cause."""
    assert pytest_in(project, "--crossdyn-regen").returncode == 0
    test_file = project / "tests" / "test_arm.py"
    text = test_file.read_text()
    for good, bad in (("P.m1 * P.p1**2 + P.i1 + ", "P.m1 * P.p1**2 + "),  # forgets link 1's own inertia
                      # starts 0.6 deg off
                      ("data.qpos[:] = [np.pi / 2, 0.0]", "data.qpos[:] = [np.pi / 2 + 0.01, 0.0]")):
        assert good in text, f"the guide's example no longer has {good!r}"
        text = text.replace(good, bad)
    test_file.write_text(text)
    run = pytest_in(project)
    assert run.returncode == 1 and "2 failed" in run.stdout, run.out
    assert re.search(r"E +AssertionError: mass matrix off by up to 7\.09\de-04 on entry M\[0,0\] \(q1, q1\) "
                     r"\(a constant offset\); velocity terms and gravity agree", run.stdout), run.out
    assert "tests/test_arm/test_swing_from_horizontal.json: 3 of 5 metrics differ" in run.stdout
    assert re.search(r"drifted final_q\[0\]: baseline 0\.14\d+, now 0\.16\d+, change \+12\.\d % "
                     r"\(tolerance rel 1e-06 \+ abs 1e-09\)", run.stdout), run.out
    assert "t_bottom_s" not in run.stdout.split("metrics differ", 1)[1].split("short test summary")[0]  # within 1 %


def test_crossdyn_from_collects_selects_and_judges(project):
    run = pytest_in(project, "--crossdyn-from", "ci/experiments.py", "--crossdyn-from", "ci/more.py",
                    "--crossdyn-out", "results", "-k", "not test_")
    assert run.returncode == 1, run.out
    outcomes = {node: word for word, node in re.findall(r"^(PASSED|FAILED|ERROR) (ci/\S+)", run.stdout, flags=re.M)}
    assert outcomes == {
        "ci/experiments.py::pendulum-pd": "PASSED", "ci/more.py::noisy-mean": "PASSED",
        "ci/more.py::misses": "FAILED", "ci/more.py::crashes": "ERROR", "ci/more.py::truthy-string": "ERROR",
        "ci/more.py::no-verdict": "ERROR"}, (outcomes, run.out)
    assert "2 passed" in run.stdout and "2 deselected" in run.stdout and "1 failed" in run.stdout
    assert "expected: error below 1e-3\n  measured: error 0.25" in run.stdout
    results = project / "results"
    assert re.search(r"experiment 'crashes': RuntimeError: simulated crash\n  traceback: \S+/crashes/error.txt",
                     run.stdout), run.out
    # crossdyn's one judge of what an experiment returns (results.check_metrics), in its words
    assert "experiment 'truthy-string' returned 'passed': 'yes' (a str); only True or False is a verdict" in run.stdout
    assert "experiment 'no-verdict' returned no 'passed' and no 'measured' metric" in run.stdout
    assert "simulated crash" in (results / "crashes" / "error.txt").read_text()
    assert (results / "pendulum-pd" / "angle.png").stat().st_size > 10_000
    assert json.loads((results / "noisy-mean" / "metrics.json").read_text())["short"] is True
    summary = {row["name"]: row for row in json.loads((results / "summary.json").read_text())}
    assert set(summary) == {"pendulum-pd", "noisy-mean", "misses", "crashes", "truthy-string", "no-verdict"}
    assert summary["truthy-string"]["passed"] is False  # never shown as a pass
    assert (results / "index.html").is_file() and "pendulum-pd" in (results / "summary.md").read_text()

    selected = pytest_in(project, "--crossdyn-from", "ci/experiments.py", "-k", "pendulum")
    assert selected.returncode == 0 and "1 passed, 2 deselected" in selected.stdout, selected.out
    assert "PASSED ci/experiments.py::pendulum-pd" in selected.stdout


def test_crossdyn_from_module_and_a_test_modules_declaration(project):
    """A module name works as a file does; ``experiment_tests`` in a test module adds items there, with check=."""
    (project / "tests" / "test_experiments.py").write_text(
        "from crossdyn.testing import experiment_tests\n\n"
        "def at_most_one_plot(name, metrics, out_dir):\n"
        "    assert len(list(out_dir.glob('*.png'))) == 0, f'{name} wrote a plot'\n\n"
        "mine = experiment_tests('ci/experiments.py', check=at_most_one_plot)\n")
    run = pytest_in(project, "--crossdyn-from", "more", "-k", "pendulum or noisy", "-v",
                    env={"PYTHONPATH": str(project / "ci")})
    assert run.returncode == 1, run.out
    assert "tests/test_experiments.py::mine::pendulum-pd FAILED" in run.stdout
    assert "AssertionError: pendulum-pd wrote a plot" in run.stdout
    assert "more::noisy-mean PASSED" in run.stdout


@pytest.mark.slow
def test_same_metrics_serial_with_workers_and_with_xdist(project):
    """--crossdyn-workers 2 and pytest-xdist -n 2 write byte-identical metrics to a serial run's."""
    args = ("--crossdyn-from", "ci/experiments.py", "--crossdyn-from", "ci/more.py", "-k", "pendulum or noisy",
            "--crossdyn-seed", "7")
    runs = {how: pytest_in(project, *args, "--crossdyn-out", how, *extra)
            for how, extra in (("serial", ()), ("workers", ("--crossdyn-workers", "2")), ("xdist", ("-n", "2")))}
    for how, run in runs.items():
        assert run.returncode == 0 and "2 passed" in run.stdout, (how, run.out)
    for name in ("pendulum-pd", "noisy-mean"):
        texts = {how: (project / how / name / "metrics.json").read_text() for how in runs}
        assert len(set(texts.values())) == 1, texts
        assert json.loads(texts["serial"])["seed"] == 7


def test_plugin_is_inert_for_a_suite_that_does_not_use_it(tmp_path):
    """Same output with and without the plugin; no MuJoCo, NumPy or crossdyn machinery imported."""
    bare_project(tmp_path, "test_plain.py", "import pytest\n\n"
                 "def test_a():\n    assert 1 + 1 == 2\n\n"
                 "@pytest.mark.parametrize('x', [1, 2, 3])\n"
                 "def test_b(x, tmp_path):\n    assert x > 0\n\n"
                 "def test_c():\n    assert False, 'fails on purpose'\n")
    (tmp_path / "conftest.py").write_text(
        "import sys, json\n\n"
        "def pytest_sessionfinish(session):\n"
        "    name = 'on.json' if session.config.pluginmanager.has_plugin('crossdyn') else 'off.json'\n"
        "    with open(name, 'w') as f:\n        json.dump(sorted(sys.modules), f)\n")
    on, off = pytest_in(tmp_path), pytest_in(tmp_path, "-p", "no:crossdyn")

    def timeless(text):  # and without pytest's own header line listing the plugins
        return re.sub(r"in \d+\.\d+s", "in Ts", re.sub(r"^plugins: .*\n", "", text, flags=re.M))

    assert on.returncode == off.returncode == 1
    assert timeless(on.out) == timeless(off.out), (on.out, off.out)
    loaded = set(json.loads((tmp_path / "on.json").read_text()))
    assert "crossdyn.testing.plugin" in loaded and "crossdyn.testing.plugin" not in json.loads(
        (tmp_path / "off.json").read_text())
    heavy = sorted(m for m in loaded if m.split(".")[0] in ("mujoco", "numpy", "scipy", "matplotlib")
                   or m.startswith(("crossdyn.experiments.core", "crossdyn.testing.items", "crossdyn.testing.runner",
                                    "crossdyn.testing.baseline_fixture")))
    assert heavy == [], heavy


# (files to add to the project, pytest arguments, exit status, phrase of the failure's one line).
BAD_INPUT = [
    ({}, ["--crossdyn-from", "ci/nope.py"], 4, "ERROR: --crossdyn-from ci/nope.py: no such file"),
    ({}, ["--crossdyn-from", "no_such_module_anywhere"], 2,
     "crossdyn: --from no_such_module_anywhere: no such file or importable module"),
    ({"ci/raises.py": "raise RuntimeError('broken at import')\n"}, ["--crossdyn-from", "ci/raises.py"], 2,
     "failed to import: RuntimeError: broken at import"),
    ({"ci/syntax.py": "def broken(:\n"}, ["--crossdyn-from", "ci/syntax.py"], 2, "syntax error on line 1"),
    # A file that ends its process while imported ends a worker first, never pytest (whose status would be 0).
    ({"ci/ends.py": "import os\nos._exit(0)\n"}, ["--crossdyn-from", "ci/ends.py"], 2,
     "ci/ends.py: the worker process ended (exit status 0) while importing it"),
    ({"tests/test_decl.py": "from crossdyn.testing import experiment_tests\nmine = experiment_tests('ci/ends.py')\n",
      "ci/ends.py": "import os\nos._exit(0)\n"}, [], 2, "ci/ends.py: the worker process ended (exit status 0)"),
    ({"ci/exits.py": "import sys\nsys.exit(0)\n"}, ["--crossdyn-from", "ci/exits.py"], 2,
     "called exit(0) while being imported"),
    ({"ci/takes_turn.py": "from crossdyn import experiment\n\n"
                          "@experiment('turn', summary='mine', expected='mine')\ndef turn(ctx):\n    return {}\n"},
     ["--crossdyn-from", "ci/takes_turn.py"], 2, "experiment 'turn' registered twice"),
    ({"tests/test_decl.py": "from crossdyn.testing import experiment_tests\nmine = experiment_tests('ci/gone.py')\n"},
     [], 2, "crossdyn: no experiment file ci/gone.py"),
    ({}, ["--crossdyn-workers", "0"], 4, "ERROR: --crossdyn-workers 0: expected 1 or more"),
    ({"a_file": "x"}, ["--crossdyn-out", "a_file/results"], 4,
     "ERROR: --crossdyn-out a_file/results: cannot create it"),
    ({"tests/test_b.py": "def test_b(crossdyn_baseline):\n    crossdyn_baseline.check({'a': 1.0})\n",
      "tests/test_b/test_b.json": '{"test": "x", "metrics": {"a": 1.0,}}'}, [], 1,
     "tests/test_b/test_b.json is not a crossdyn baseline: not valid JSON (Expecting property name enclosed in "
     "double quotes: line 1 column 36 (char 35)); fix it, or rewrite it with pytest --crossdyn-regen"),
    ({"tests/test_b.py": "def test_b(crossdyn_baseline):\n    crossdyn_baseline.check({'a': 1.0})\n",
      "tests/test_b/test_b.json": '[1.0]'}, [], 1, "tests/test_b/test_b.json is not a crossdyn baseline (no 'metrics' "
                                                   "table)"),
    ({"tests/test_b.py": "def test_b(crossdyn_baseline):\n    crossdyn_baseline.check({'a': 1.0})\n",
      "tests/test_b": "a file where the baselines' folder goes"}, ["--crossdyn-regen"], 1,
     "cannot keep crossdyn baselines in tests/test_b: it is a file, not a folder"),
    ({"tests/helpers.py": "def double(x):\n    '''\n    >>> b = getfixture('crossdyn_baseline')\n    '''\n"},
     ["--doctest-modules", "tests/helpers.py"], 1,
     "crossdyn_baseline keeps its file beside a test function's Python file; 'tests/helpers.py::helpers.double' "
     "(DoctestItem) is not a test function in a .py file"),
    ({"tests/test_b.py": "def test_b(crossdyn_baseline):\n    crossdyn_baseline.check({'a': object()})\n"}, [], 1,
     "TypeError: crossdyn_baseline.check: metric 'a' is a object"),
    # issue 36: seeds the experiments cannot take; a file another test's name maps to (a case-insensitive disk)
    ({}, ["--crossdyn-seed", "-1"], 4, "ERROR: --crossdyn-seed must be a whole number from 0 to 4294967295, got -1"),
    ({}, ["--crossdyn-seed", "12345678901234567890"], 4, "got 12345678901234567890"),
    ({"tests/test_decl.py": "from crossdyn.testing import experiment_tests\nmine = experiment_tests('ci/more.py', "
                            "seed=-1)\n"}, [], 2, "seed must be a whole number from 0 to 4294967295, got -1"),
    ({"tests/test_b.py": "def test_b(crossdyn_baseline):\n    crossdyn_baseline.check({'a': 1.0})\n",
      "tests/test_b/test_b.json": '{"test": "tests/test_b.py::test_B", "metrics": {"a": 1.0}}'}, [], 1,
     "tests/test_b/test_b.json is the baseline of test_B, not of test_b: the two test names map to one file"),
    # a function under test that ends its process: its test fails, the earlier failure stays, the status is not 0
    ({"tests/test_b.py": "import os\nfrom crossdyn.testing import assert_mass_matrix\n\n"
                         "def test_a():\n    assert False, 'an earlier failure'\n\n"
                         "def test_b():\n    assert_mass_matrix(lambda q: os._exit(0), 'cart_pole', samples=5)\n"},
     [], 1, "the process checking the function ended (exit status 0) before the check finished"),
]


@pytest.mark.parametrize("files, args, status, phrase", BAD_INPUT, ids=[case[3][:40] for case in BAD_INPUT])
def test_bad_input_is_a_clear_failure(project, files, args, status, phrase):
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    run = pytest_in(project, "-k", "not test_arm", *args)
    assert run.returncode == status, run.out
    assert phrase in run.out, run.out
    assert "Traceback (most recent call last)" not in run.out and "site-packages/_pytest" not in run.out, run.out


def test_crossdyn_timeout_stops_a_hanging_experiment(tmp_path):
    """--crossdyn-timeout: a hanging experiment is stopped and its item errors as timed out; the next runs."""
    bare_project(tmp_path, "slow.py",
        "import time\nfrom crossdyn import experiment\n\n"
        "@experiment('hangs', summary='-', expected='-')\ndef hangs(ctx):\n    time.sleep(600)\n\n"
        "@experiment('quick', summary='-', expected='-')\ndef quick(ctx):\n"
        "    return {'passed': True, 'measured': 'done'}\n")
    run = pytest_in(tmp_path, "--crossdyn-from", "slow.py", "--crossdyn-timeout", "3")
    assert run.returncode == 1, run.out
    assert re.search(r"^ERROR slow.py::hangs", run.stdout, flags=re.M) and "timed out" in run.stdout, run.out
    assert re.search(r"^PASSED slow.py::quick", run.stdout, flags=re.M), run.out
    bad = pytest_in(tmp_path, "--crossdyn-from", "slow.py", "--crossdyn-timeout", "-1")
    assert bad.returncode != 0 and "--crossdyn-timeout -1.0: expected a positive number of seconds" in bad.out
