"""JUnit XML of a run (``crossdyn run --junit FILE``), the format CI systems read.

One ``<testcase>`` per experiment: a missed expectation or baseline drift is a
``<failure>`` (one carrying both messages: readers show one per case), a crash,
timeout or refused input an ``<error>`` with the traceback in its body; the
measured figure goes to ``<system-out>``.
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import cast

from .files import write_text

__all__ = ["write_junit", "to_xml"]

SUITE = "crossdyn"
# Characters XML 1.0 cannot hold even escaped (terminal colour codes in a traceback, say).
_NOT_XML = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(text: str) -> str:
    return _NOT_XML.sub("?", text)


def _case(outcome) -> tuple[ET.Element, str | None]:
    """The ``<testcase>`` of one outcome, and its kind of problem (``"failure"``, ``"error"`` or None)."""
    case = ET.Element("testcase", classname=SUITE, name=outcome.name, time=f"{outcome.seconds:.3f}")
    kind = None
    if outcome.error is not None:
        kind = "error"
        error = ET.SubElement(case, "error", message=_text(outcome.error), type="crash")
        error.text = _text(outcome.detail or outcome.error)
    else:
        messages, types, body = [], [], []
        if not outcome.passed:
            messages.append(f"expected {outcome.expected}; measured {outcome.measured}")
            types.append("expectation")
        if outcome.baseline is not None and not outcome.baseline.passed:
            named = [f"{d.metric} {d.change}" for d in outcome.baseline.drifted]
            named += [f"{metric} missing" for metric in outcome.baseline.missing]
            shown = ", ".join(named[:5]) + (", ..." if len(named) > 5 else "")
            messages.append(f"baseline: {outcome.baseline.headline}" + (f" ({shown})" if named else ""))
            types.append("baseline")
            body += outcome.baseline.lines()
        if messages:
            kind = "failure"
            failure = ET.SubElement(case, "failure", message=_text("; ".join(messages)), type="+".join(types))
            failure.text = _text("\n".join(messages + body))
    ET.SubElement(case, "system-out").text = _text(f"expected: {outcome.expected}\nmeasured: {outcome.measured}\n")
    return case, kind


def to_xml(outcomes, out: Path | None = None) -> ET.ElementTree:
    """The run's outcomes as a JUnit ``<testsuites>`` tree.

    Args:
      outcomes: :class:`~.results.Outcome` of the run, in run order (each
        carries its traceback; no file is read).
      out: unused; kept so that older callers passing the output folder work.
    """
    cases = [_case(o) for o in outcomes]
    counts = {kind: sum(k == kind for _, k in cases) for kind in ("failure", "error")}
    total = f"{sum(o.seconds for o in outcomes):.3f}"
    root = ET.Element("testsuites", name=SUITE, tests=str(len(cases)), failures=str(counts["failure"]),
                      errors=str(counts["error"]), time=total)
    suite = ET.SubElement(root, "testsuite", name=SUITE, tests=str(len(cases)), failures=str(counts["failure"]),
                          errors=str(counts["error"]), skipped="0", time=total,
                          timestamp=time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()))
    suite.extend(case for case, _ in cases)
    return ET.ElementTree(root)


def write_junit(path: Path, outcomes, out: Path | None = None) -> Path:
    """Write the JUnit XML of a run to ``path`` (atomically) and return it (``out`` is unused)."""
    tree = to_xml(outcomes)
    ET.indent(tree)
    root = cast(ET.Element, tree.getroot())  # to_xml's tree always has its <testsuites> root
    write_text(Path(path), ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")
    return Path(path)
