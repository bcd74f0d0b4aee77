"""``crossdyn tune EXPERIMENT --vary-from DIR/identified.json``: gains tuned over what the logs leave uncertain.

Each identified parameter of ``identified.json`` is drawn anew for every run of the
tune, **uniformly in its 95 % interval** ``[low, high]`` (each element of a vector
quantity on its own), and written into that run's own copy of the experiment's
MJCF (:func:`.report.write_values`, the writer of ``identified.xml``: only those
numbers change).  The run's ``mjcf`` parameter points at the copy, so every
experiment taking an ``mjcf`` parameter (the cart-pole, the double pendulum, a
user's) can be tuned this way; one without it is refused.

Why uniform and not the normal the interval comes from: the tune asks for gains
that hold *for every model the logs allow*, a set, not for the average model; a
uniform draw stays inside the interval (a normal puts one run in twenty outside
it, and its tail below zero for a loosely determined damping or mass) and reaches
the interval's ends as often as its middle, where a robust design is tested.

Sample 0 (the defaults) runs at the identified values themselves: the tune's
reference is the identified model.  A run's draw depends only on the tune's seed
and its sample number, so a resumed tune redraws the same models, and the drawn
values are columns of ``samples.csv`` (``body:pole:mass``; ``body:pole:com:0`` ...
for a vector), beside the varied parameters.  Parameters the logs did not identify
are skipped and said (their value would be a guess); a sensor's bias is skipped
too (no MJCF attribute holds it).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from ..errors import ParameterError
from ..models import load_model, model_path
from .outputs import write_values
from .spec import ATTRIBUTES, GRAMMAR

__all__ = ["Uncertain", "read_identified", "check_elements", "draw", "write_model", "columns", "MJCF_PARAM"]

MJCF_PARAM = "mjcf"  # the parameter through which an experiment receives its model
_KINDS = ("body", "joint", "actuator", "sensor")


@dataclass(frozen=True)
class Uncertain:
    """One identified parameter and its interval.

    Attributes:
      name: its name in ``identified.json`` (``body:pole:mass``, ``delay``).
      kind, element, attr: the name's parts (``body``, ``pole``, ``mass``; ``delay``, ``""``, ``delay``).
      value: the fitted value, (size,), in the parameter's unit.
      low, high: its 95 % interval, (size,) each.
      unit: its unit.
    """

    name: str
    kind: str
    element: str
    attr: str
    value: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    unit: str = ""

    def columns(self) -> list[str]:
        """Its columns in ``samples.csv``: its name, or ``name:k`` per element of a vector."""
        return [self.name] if len(self.value) == 1 else [f"{self.name}:{k}" for k in range(len(self.value))]


def columns(params: list[Uncertain]) -> list[str]:
    """Every column the drawn values fill, in order."""
    return [c for p in params for c in p.columns()]


def _split(name: str) -> tuple[str, str, str] | None:
    """``(kind, element, attr)`` of a name ``crossdyn identify`` writes, or None for any other name.

    The attribute must be one identify fits (:data:`.spec.GRAMMAR`): ``body:pole:colour`` is None,
    so a hand-edited file cannot make a tune vary nothing and say it did.
    """
    if name == "delay":
        return "delay", "", "delay"
    kind, _, rest = name.partition(":")
    element, _, attr = rest.rpartition(":")
    if kind not in _KINDS or not element or not attr:
        return None
    base = re.sub(r"\[[0-2]\]$", "", attr) if kind == "body" else attr
    if base not in ATTRIBUTES[kind] or (base != attr and base not in ("com", "inertia")):
        return None
    return kind, element, attr


def _numbers(entry: dict, key: str) -> tuple[float, ...] | None:
    raw = entry.get(key)
    raw = [raw] if isinstance(raw, (int, float)) and not isinstance(raw, bool) else raw
    if not isinstance(raw, list) or not raw or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                       and math.isfinite(v) for v in raw):
        return None
    return tuple(float(v) for v in raw)


def read_identified(path: str | Path) -> tuple[list[Uncertain], list[str]]:
    """The identified parameters of ``identified.json`` and a sentence per parameter skipped.

    Raises:
      ParameterError: the file is missing or is not an ``identified.json`` (naming the entry
        that is not), or it leaves nothing to vary.
    """
    path = Path(path)
    what = f"--vary-from {path}"
    try:
        content = json.loads(path.read_text())
    except OSError as exc:
        raise ParameterError(f"{what}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, UnicodeDecodeError):
        raise ParameterError(f"{what}: not an identified.json (not JSON); give the file 'crossdyn identify' "
                             "wrote") from None
    entries = content.get("parameters") if isinstance(content, dict) else None
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise ParameterError(f"{what}: not an identified.json (no list of \"parameters\"); give the file "
                             "'crossdyn identify' wrote")
    params, skipped = [], []
    for i, entry in enumerate(entries):
        name, identified = entry.get("name"), entry.get("identified")
        parts = _split(name) if isinstance(name, str) else None
        if parts is None or not isinstance(identified, bool):
            shown = f" ({name!r})" if isinstance(name, str) else ""
            raise ParameterError(f"{what}: parameter {i + 1}{shown} is not one 'crossdyn identify' writes (a "
                                 f"\"name\" of {GRAMMAR}, and \"identified\": true or false)")
        if not identified:
            skipped.append(f"{name}: not identified by the logs, kept at the model's value (not varied)")
            continue
        if parts[0] == "sensor":
            skipped.append(f"{name}: a sensor's bias changes no model attribute (not varied)")
            continue
        value, low, high = (_numbers(entry, key) for key in ("value", "low", "high"))
        if value is None or low is None or high is None or not len(value) == len(low) == len(high) or \
                not all(lo <= v <= hi for lo, v, hi in zip(low, value, high, strict=True)):
            raise ParameterError(f"{what}: parameter {name!r} is marked identified but has no finite "
                                 "low <= value <= high of one size")
        unit = entry.get("unit") if isinstance(entry.get("unit"), str) else ""
        params.append(Uncertain(name, *parts, value, low, high, unit))
    if not params:
        raise ParameterError(f"{what}: no identified parameter to vary ({'; '.join(skipped)})")
    return params, skipped


def check_elements(params: list[Uncertain], mjcf: str) -> None:
    """Every parameter must name an element of the model the runs start from.

    Raises:
      ParameterError: an element the model lacks (the identification was of another model).
      ModelError: the model cannot be loaded.
    """

    model = load_model(mjcf)
    kinds = {"body": mujoco.mjtObj.mjOBJ_BODY, "joint": mujoco.mjtObj.mjOBJ_JOINT,
             "actuator": mujoco.mjtObj.mjOBJ_ACTUATOR}
    for p in params:
        if p.kind == "delay":
            if model.nu == 0:
                raise ParameterError(f"--vary-from: {model_path(mjcf).name} has no actuators to delay")
            continue
        if mujoco.mj_name2id(model, kinds[p.kind], p.element) < 0:
            raise ParameterError(f"--vary-from: {model_path(mjcf).name} has no {p.kind} {p.element!r} "
                                 f"({p.name} was identified on another model)")


def draw(params: list[Uncertain], seed: int, index: int) -> dict[str, float]:
    """Run ``index``'s values by column: the fitted values for 0, else uniform in each interval.

    The draw depends on ``seed`` and ``index`` only, whatever the search or the order of the runs.
    """
    if index == 0:
        return dict(zip(columns(params), (v for p in params for v in p.value), strict=True))
    rng = np.random.default_rng([seed, index])
    low = np.array([v for p in params for v in p.low])
    high = np.array([v for p in params for v in p.high])
    return dict(zip(columns(params), (float(v) for v in rng.uniform(low, high)), strict=True))


def write_model(mjcf: str, values: dict[str, float], params: list[Uncertain], out: Path) -> Path:
    """Write ``out/model.xml``: the run's MJCF with the drawn ``values`` (by column) written in.

    Returns:
      the path of the written MJCF.
    """
    path = model_path(mjcf)
    quantities = [(p.kind, p.element, p.attr, np.array([values[c] for c in p.columns()])) for p in params]
    return write_values(path, quantities, load_model(path), out, "model.xml")

