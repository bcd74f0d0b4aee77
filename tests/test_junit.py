"""JUnit XML: one test case per experiment; a missed expectation, a drift and a crash each carry their message."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from crossdyn.experiments.core.baseline import DEFAULT_TOLERANCE, Comparison, Drift
from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.junit import to_xml, write_junit
from crossdyn.experiments.core.runner import Outcome


def _outcomes(out):
    """Four outcomes; the crash carries its traceback in memory (JUnit reads no file the run wrote)."""
    trace = "Traceback (most recent call last):\n  ...\nZeroDivisionError: x\x1b[0m\n"
    drift = Comparison("drifts", drifted=[Drift("settle_s", 1.0, 1.05, DEFAULT_TOLERANCE)])
    return [
        Outcome("passes", "agree to 1e-10", "max |error| 1e-15 < 2", True, 1.0, baseline=Comparison("passes")),
        Outcome("misses", "settle < 1 s", "settled in 1.4 s", False, 2.0),
        Outcome("drifts", "settle < 1 s", "settled in 0.9 s", True, 3.0, baseline=drift),
        Outcome("crashes", "anything", "crashed", False, 0.5, error="ZeroDivisionError: x", detail=trace),
    ]


def test_one_case_per_experiment_with_its_failure(tmp_path):
    root = ET.fromstring(ET.tostring(to_xml(_outcomes(tmp_path), tmp_path).getroot()))  # a round trip parses
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "2", "1")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert list(cases) == ["passes", "misses", "drifts", "crashes"]
    assert cases["passes"].find("failure") is None and cases["passes"].find("error") is None
    missed = cases["misses"].find("failure")
    assert missed.get("type") == "expectation" and "expected settle < 1 s; measured settled in 1.4 s" in missed.get(
        "message")
    drifted = cases["drifts"].find("failure")
    assert drifted.get("type") == "baseline" and "settle_s +5 %" in drifted.get("message")
    assert "settle_s: baseline 1, now 1.05" in drifted.text
    crashed = cases["crashes"].find("error")
    assert crashed.get("message") == "ZeroDivisionError: x" and "Traceback" in crashed.text
    assert "\x1b" not in crashed.text  # a control character XML cannot hold is replaced
    assert cases["misses"].get("time") == "2.000"


def test_written_file_parses_and_cli_writes_it(tmp_path, capsys):
    path = write_junit(tmp_path / "deep" / "junit.xml", _outcomes(tmp_path / "out"), tmp_path / "out")
    assert ET.parse(path).getroot().find("testsuite").get("tests") == "4"
    code = main(["run", "two-link-lecture-no-link-inertia", "two-link-lagrange", "--short",
                 "--out", str(tmp_path / "run"),
                 "--junit", str(tmp_path / "run.xml")])
    assert code == 0
    cases = list(ET.parse(tmp_path / "run.xml").getroot().iter("testcase"))
    assert [c.get("name") for c in cases] == ["two-link-lecture-no-link-inertia", "two-link-lagrange"]
    assert all(c.find("failure") is None for c in cases)
