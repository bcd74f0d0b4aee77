"""``import crossdyn`` is the front door: the generic API, cheap to import, free of one robot's names.

- Every name it lists resolves and is defined in the machinery (``crossdyn.experiments.core``).
- It is the one door: ``crossdyn.experiments`` (the layer) re-exports none of its names.
- Nothing of a system is there: no name is defined in a system's package (the biped's
  scenarios live in ``crossdyn.experiments.biped``), and the check sees one that is.
- ``import crossdyn`` loads neither MuJoCo nor NumPy (names load on first use).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import crossdyn


def _defined_in(name: str) -> str:
    value = getattr(crossdyn, name)
    return getattr(value, "__module__", None) or crossdyn.API[name]


def test_every_front_door_name_resolves_and_is_the_machinerys():
    assert len(crossdyn.API) >= 40
    for name in crossdyn.API:
        assert _defined_in(name).startswith("crossdyn.experiments.core."), (name, _defined_in(name))


def robot_names(names, defined_in) -> list[str]:
    """The names defined outside the machinery: a system's, not the tool's."""
    return [name for name in names if not defined_in(name).startswith("crossdyn.experiments.core.")]


def test_no_robot_names_at_the_front_door():
    assert robot_names(crossdyn.API, _defined_in) == []
    assert not {"Setup", "balance_recovery", "jump", "REALISTIC", "plot_states"} & set(dir(crossdyn))


def test_the_robot_name_check_has_teeth():
    from crossdyn.experiments.biped import balance_recovery

    assert robot_names(["balance_recovery"], lambda name: balance_recovery.__module__) == ["balance_recovery"]


def test_one_door():
    """``crossdyn.experiments`` is the layer, never a second door: it names none of the front door's names."""
    import crossdyn.experiments as experiments

    assert crossdyn.experiments is experiments  # the layer, never the registry's listing
    assert [name for name in crossdyn.API if hasattr(experiments, name)] == []
    with pytest.raises(AttributeError):
        experiments.simulate  # noqa: B018


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'crossdyn' has no attribute 'balance_recovery'"):
        crossdyn.balance_recovery  # noqa: B018


def test_import_is_cheap():
    code = "import sys, crossdyn; crossdyn.API; print('mujoco' in sys.modules, 'numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "False"], done.stdout + done.stderr
