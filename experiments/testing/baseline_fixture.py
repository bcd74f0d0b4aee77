"""The ``crossdyn_baseline`` fixture: a test's metrics against a JSON file stored beside the test.

``crossdyn_baseline.check(metrics)`` in ``tests/test_arm.py::test_settling`` compares the
metrics, flattened to dotted names, with ``tests/test_arm/test_settling.json`` as ``crossdyn
run --baseline`` compares; ``pytest --crossdyn-regen`` writes the files instead.  A value keeps
its type in the file (NaN and the infinities are JSON's ``NaN`` and ``Infinity``, never text), and
a number is compared with a number only: the text ``"inf"`` never equals the number inf.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from crossdyn.experiments.core.baseline import (
    DEFAULT_TOLERANCE,
    NON_FINITE_TEXTS,
    Drift,
    Tolerance,
    numeric_metrics,
    refuse_numeric_text,
)
from crossdyn.experiments.core.files import write_text

__all__ = ["Baseline", "baseline_path", "baseline_file", "flatten"]

# Characters kept in a baseline's file name; others (path separators, quotes, spaces, "%" itself) become
# "%XX" (their UTF-8 bytes in hex).
_UNSAFE = re.compile(r"[^A-Za-z0-9_.,=+\-\[\]]")
# A test name kept as its file name as it is: lower case (a case-insensitive disk tells no two apart), no
# character escaped, not ending as a hashed name does.
_PLAIN = re.compile(r"(?![\s\S]*-[0-9a-f]{12}$)[a-z0-9_.,=+\-\[\]]+")
# Longest file name stem; a name cut to it keeps the hash of the full name beside it.
_MAX_STEM = 120


def baseline_path(node) -> Path:
    """Where the baseline of test ``node`` lives: ``DIR/test_file/[Class.]test_name[params].json``
    (``pytest.fail`` for a node that is not a test function in a Python file)."""
    __tracebackhide__ = True
    path = getattr(node, "path", None)
    if not isinstance(node, pytest.Function) or path is None or Path(path).suffix != ".py":
        pytest.fail(f"crossdyn_baseline keeps its file beside a test function's Python file; {node.nodeid!r} "
                    f"({type(node).__name__}) is not a test function in a .py file", pytrace=False)
    classes = [parent.name for parent in node.listchain() if isinstance(parent, pytest.Class)]
    return baseline_file(Path(path), node.name, ".".join(classes) or None)


def _escaped(match: re.Match) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group().encode("utf-8", "surrogatepass"))


def baseline_file(test_file: Path, name: str, cls: str | None = None) -> Path:
    """``test_file``'s folder / its stem / ``[cls.]name.json``, one file per test on any file system.

    ``cls`` is the test's classes, outermost first, joined by dots.  A plain name (lower case, nothing
    to escape: :data:`_PLAIN`) is the file's name; any other is written readably (unsafe characters as
    ``%XX``, cut to :data:`_MAX_STEM`) with a hash of the full name beside it, so two tests never
    share a file: not ``a/b``, ``a_b`` and ``a b``, not ``TestA`` and ``Testa`` on a case-insensitive
    disk, not two long names that begin alike.
    """
    full = (f"{cls}." if cls else "") + name
    if _PLAIN.fullmatch(full) and len(full) <= _MAX_STEM:
        stem = full
    else:
        digest = hashlib.sha256(full.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        stem = f"{_UNSAFE.sub(_escaped, full)[:_MAX_STEM - 13]}-{digest}"
    return test_file.parent / test_file.stem / f"{stem}.json"


def _test_name(nodeid: str) -> str:
    """A node id without its file part (``test_a.py::TestA::test_x[1]`` -> ``TestA::test_x[1]``)."""
    return nodeid.split("::", 1)[-1]


def _plain(value, where: str):
    """``value`` as plain JSON types (NumPy arrays and scalars converted); anything else is refused."""
    if isinstance(value, dict):
        return {str(key): _plain(item, f"{where}.{key}" if where else str(key)) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):  # ndarray or NumPy scalar
        return _plain(value.tolist(), where)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"crossdyn_baseline.check: metric {where!r} is a {type(value).__name__}; expected numbers, "
                    f"booleans, strings or None (or dicts and lists of them)")


def _is_number(value) -> bool:
    """A value the baseline rules compare with a tolerance (numbers, and NaN/inf as stored)."""
    return bool(numeric_metrics({"v": value}))


def _numbers(flat: dict) -> dict[str, float]:
    """The numbers of a flat table, as floats: its int and float values only (its text is text, "inf" too)."""
    return {key: float(value) for key, value in flat.items() if _is_number(value) and not isinstance(value, str)}


def flatten(metrics: dict) -> dict:
    """Every metric by dotted name, numbers as floats, booleans/strings/None as they are, sorted by name.

    Raises:
      TypeError: a value is none of numbers, booleans, strings, None, dicts and lists of them.
    """
    metrics = _plain(metrics, "")
    flat = {key[2:]: value for key, value in numeric_metrics({"m": metrics}).items()}
    exact: list = []

    def encode(value, list_item: bool = False):
        """The same tree with each non-number leaf replaced by its index in ``exact``, numbers dropped."""
        if isinstance(value, dict):  # a list item's "name" labels it, as in numeric_metrics: keep it
            return {key: item if key == "name" and list_item and isinstance(item, str) else encode(item)
                    for key, item in value.items()}
        if isinstance(value, list):
            return [encode(item, list_item=True) for item in value]
        if _is_number(value):
            return None
        exact.append(value)
        return len(exact) - 1

    flat.update({key[2:]: exact[int(i)] for key, i in numeric_metrics({"m": encode(metrics)}).items()})
    return dict(sorted(flat.items()))


def _drift(drift: Drift) -> str:
    """A drift as ``crossdyn run --baseline`` words it, in full digits when 6 would show two equal values."""
    if f"{drift.baseline:.6g}" != f"{drift.now:.6g}":
        return str(drift)
    return (f"{drift.metric}: baseline {drift.baseline!r}, now {drift.now!r}{drift.change_shown} "
            f"(tolerance {drift.tolerance})")


def _same(then, now) -> bool:
    """Exact equality that tells True from 1 and "1" from 1."""
    return type(then) is type(now) and then == now


class Baseline:
    """The fixture's value: ``path``, this test's baseline file; ``regen``: write it instead of comparing."""

    def __init__(self, node, regen: bool, root: Path, written: list | None = None):
        self.node = node
        self.path = baseline_path(node)
        self.regen = regen
        self.root = Path(root)
        self.written: list[str] = written if written is not None else []  # "path (what changed)", for the summary
        self._checked = False

    def _shown(self, path: Path) -> str:
        """``path`` relative to pytest's rootdir when inside it (as messages show it)."""
        try:
            return Path(os.path.relpath(path, self.root)).as_posix() if path.is_relative_to(self.root) else str(path)
        except ValueError:  # another drive
            return str(path)

    def _read(self) -> dict | None:
        """The stored flat table, or None when there is no file; a bad file fails the test."""
        __tracebackhide__ = True
        shown = self._shown(self.path)
        problem = None  # failed outside the except blocks, so pytest shows no chained exception
        try:
            record = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            pytest.fail(f"cannot keep crossdyn baselines in {self._shown(self.path.parent)}: it is a file, not a "
                        f"folder", pytrace=False)
        except (OSError, UnicodeDecodeError) as exc:
            problem = f"cannot read crossdyn baseline {shown}: {getattr(exc, 'strerror', None) or exc}"
        except ValueError as exc:
            problem = f"{shown} is not a crossdyn baseline: not valid JSON ({exc})"
        else:
            if not isinstance(record, dict) or not isinstance(record.get("metrics"), dict):
                problem = f"{shown} is not a crossdyn baseline (no 'metrics' table)"
            elif isinstance(record.get("test"), str) and "::" in record["test"] and \
                    _test_name(record["test"]) != _test_name(self.node.nodeid):
                # Two tests whose names one file system cannot tell apart (a case-insensitive one) share it.
                problem = (f"{shown} is the baseline of {_test_name(record['test'])}, not of "
                           f"{_test_name(self.node.nodeid)}: the two test names map to one file; rename one")
        if problem:
            pytest.fail(f"{problem}; fix it, or rewrite it with pytest --crossdyn-regen", pytrace=False)
        return record["metrics"]

    def _text(self, flat: dict) -> str:
        """The file's content for ``flat``: indented JSON, each value of its own type (NaN and the infinities
        as JSON's ``NaN`` and ``Infinity``, which Python reads back as numbers)."""
        return json.dumps({"test": self.node.nodeid, "metrics": flat}, indent=2, allow_nan=True) + "\n"

    def _write(self, text: str) -> bool:
        """Write the file unless it already holds ``text``; True when written."""
        __tracebackhide__ = True

        folder = self.path.parent
        if folder.exists() and not folder.is_dir():
            pytest.fail(f"cannot write crossdyn baseline {self._shown(self.path)}: {self._shown(folder)} is a file, "
                        f"not a folder", pytrace=False)
        problem = None
        try:
            if self.path.is_file() and self.path.read_text() == text:
                return False
            write_text(self.path, text)
        except (OSError, UnicodeDecodeError) as exc:
            problem = getattr(exc, "strerror", None) or str(exc)
        if problem:
            pytest.fail(f"cannot write crossdyn baseline {self._shown(self.path)}: {problem}", pytrace=False)
        return True

    def check(self, metrics: dict, tolerances: dict | None = None) -> None:
        """Compare ``metrics`` with this test's baseline file (or write it under ``--crossdyn-regen``).

        Args:
          metrics: metric name -> number, bool, string or None; nested dicts, lists and NumPy
            values are flattened to dotted names.
          tolerances: per flattened name, a relative tolerance (``0.02``: +-2 %) or a
            :class:`~crossdyn.experiments.core.baseline.Tolerance` (default ``DEFAULT_TOLERANCE``).

        Raises:
          AssertionError: no baseline file; or a metric moved, is new or is missing (each named).
          TypeError, CrossdynError: malformed ``metrics`` or ``tolerances``, or a text metric that
            reads as a number (``"inf"``).
        """
        __tracebackhide__ = True
        if self._checked:
            raise RuntimeError(f"crossdyn_baseline.check was called twice in {self.node.nodeid}; one test keeps "
                               f"one baseline file ({self._shown(self.path)}): check one dict of metrics")
        self._checked = True
        if not isinstance(metrics, dict):
            raise TypeError(f"crossdyn_baseline.check takes a dict of metrics, got {type(metrics).__name__}")
        refuse_numeric_text(_plain(metrics, ""), "crossdyn_baseline.check: ")
        now = flatten(metrics)
        tols = {name: Tolerance.of(name, value) for name, value in (tolerances or {}).items()}
        unknown = sorted(set(tols) - set(now))
        if unknown:
            raise ValueError(f"crossdyn_baseline.check: tolerance given for {', '.join(map(repr, unknown))}, which "
                           f"is not among the metrics ({', '.join(now) or 'none'})")
        then = self._read()
        shown = self._shown(self.path)
        if self.regen:
            changed = "new" if then is None else "; ".join(self._differences(then, now, tols)) or "within tolerance"
            if self._write(self._text(now)):
                self.written.append(f"{shown} ({changed})")
            return
        if then is None:
            raise AssertionError(f"no crossdyn baseline {shown} for this test: run `pytest --crossdyn-regen "
                                 f"{self.node.nodeid}` to write it (and commit it)")
        lines = self._differences(then, now, tols)
        if lines:
            raise AssertionError(f"crossdyn baseline {shown}: {len(lines)} of {len(set(then) | set(now))} metrics "
                                 f"differ\n" + "\n".join(f"  {line}" for line in lines)
                                 + "\n  (if the change is intended, rewrite it: pytest --crossdyn-regen)")

    @staticmethod
    def _differences(then: dict, now: dict, tols: dict[str, Tolerance]) -> list[str]:
        """One line per metric that moved, is new or is missing, in name order."""
        then_numbers, now_numbers = _numbers(then), _numbers(now)
        lines = []
        for name in sorted(set(then) | set(now)):
            if name not in then:
                lines.append(f"new metric {name} = {now[name]!r} (not in the baseline)")
            elif name not in now:
                lines.append(f"missing metric {name} (baseline {then[name]!r}; not in this check)")
            elif name in then_numbers and name in now_numbers:
                tol = tols.get(name, DEFAULT_TOLERANCE)
                if not tol.allows(then_numbers[name], now_numbers[name]):
                    lines.append(f"drifted {_drift(Drift(name, then_numbers[name], now_numbers[name], tol))}")
            elif not _same(then[name], now[name]):
                old = (" (a number stored as text, as crossdyn once stored NaN and infinities: rewrite it with "
                       "pytest --crossdyn-regen)" if then[name] in NON_FINITE_TEXTS and name in now_numbers else "")
                lines.append(f"changed {name}: baseline {then[name]!r}, now {now[name]!r} (compared exactly){old}")
        return lines
