"""Every limit in one module, one value per meaning: ``experiments/core/limits.py``.

A limit (a ceiling or a floor named ``*_MAX``, ``*_MIN``, ``MAX_*``, ``MIN_*``) that two
modules both set could say two numbers for one name, as ``SAMPLES_MAX`` once said 1e9 in
one module and 1e5 in another: the source of every module is read, and a name is set to
one value wherever it is set, and a name of ``limits`` is set nowhere else.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import crossdyn
from crossdyn.experiments.core import limits
from crossdyn.experiments.core.errors import ParameterError

ROOT = Path(__file__).resolve().parents[1]
LIMIT = re.compile(r"^(?:[A-Z0-9_]+_(?:MAX|MIN)|(?:MAX|MIN)_[A-Z0-9_]+)$")


def _number(node: ast.expr) -> float | None:
    """The value of a constant expression of numbers (``7 * 24 * 3600.0``, ``2**32 - 1``), else None (a name:
    another constant's alias, not a value of its own)."""
    parts = list(ast.walk(node))
    if not all(isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop)) for n in parts) \
            or any(isinstance(n, ast.Constant) and type(n.value) not in (int, float) for n in parts):
        return None
    return float(eval(compile(ast.Expression(node), "<limit>", "eval"), {"__builtins__": {}}))  # numbers only


def set_limits(files) -> dict[str, dict[str, float]]:
    """name -> {file: value} of every module-level limit the files set to a number."""
    found: dict[str, dict[str, float]] = {}
    for path in files:
        for node in ast.parse(Path(path).read_text()).body:
            if not isinstance(node, ast.Assign):
                continue
            names = [t for target in node.targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
            if len(names) == 1:
                values: list[ast.expr | None] = [node.value]
            elif isinstance(node.value, ast.Tuple) and len(node.value.elts) == len(names):
                values = list(node.value.elts)
            else:  # unpacked from a call: no constant value
                values = [None] * len(names)
            for name, value in zip(names, values, strict=True):
                number = None if value is None else _number(value)
                if isinstance(name, ast.Name) and LIMIT.match(name.id) and number is not None:
                    found.setdefault(name.id, {})[str(path)] = number
    return found


def clashes(found: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The names set to more than one value, or set outside limits.py when limits.py sets them."""
    home = str(ROOT / "experiments" / "core" / "limits.py")
    return {name: where for name, where in found.items()
            if len(set(where.values())) > 1 or (home in where and len(where) > 1)}


def source_files() -> list[Path]:
    return [p for layer in ("analytic", "controllers", "experiments") for p in sorted((ROOT / layer).rglob("*.py"))]


def test_limits_holds_every_name_it_lists():
    assert sorted(set_limits([ROOT / "experiments" / "core" / "limits.py"])) == sorted(limits.__all__)


def test_one_value_per_limit_and_limits_py_its_only_home():
    assert clashes(set_limits(source_files())) == {}


def test_the_check_sees_two_values_and_a_second_home(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("SAMPLES_MAX = 1_000_000_000\nSEED_MAX = 2**32 - 1\nTRIALS_MAX = SAMPLES_MAX\n")
    b.write_text("SAMPLES_MAX = 100_000\nWINDOW_MIN, WINDOW_MAX = 0.005, 60.0\nSEED_MAX = 4294967295\n")
    found = set_limits([a, b])
    assert found["WINDOW_MAX"] == {str(b): 60.0} and "TRIALS_MAX" not in found  # an alias sets no value
    assert clashes(found) == {"SAMPLES_MAX": {str(a): 1e9, str(b): 1e5}}
    home = ROOT / "experiments" / "core" / "limits.py"
    assert set(clashes(set_limits([home, b]))) == {"WINDOW_MIN", "WINDOW_MAX", "SEED_MAX"}  # set again outside it


@pytest.mark.parametrize("run", [
    lambda d: crossdyn.simulate("cart_pole", lambda t, obs: [0.0], d),
    lambda d: crossdyn.record(crossdyn.load_model("cart_pole"), lambda t, reading: [0.0], d),
])
def test_a_run_and_a_recording_meet_one_duration_limit(run):
    """simulate and record refuse the same duration, quoting the one number."""
    with pytest.raises(ParameterError, match=f"{limits.DURATION_MAX:g}"):
        run(limits.DURATION_MAX * 1.5)
