"""MuJoCo models: loading by name or path, copies with other options, body inertia.

The one home of the helpers every system's experiments need to get numbers out of
a compiled ``MjModel``: the MJCF stays the single source of physical parameters.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np

from ... import mjcf
from ...analytic.rotation import quat_to_matrix
from .errors import ModelError
from .limits import BODIES_MAX

__all__ = ["model_path", "as_model", "load_model", "compile_warnings", "with_options", "body_inertia", "check_size"]

_log = logging.getLogger("crossdyn")



def model_path(name_or_path: str | os.PathLike) -> Path:
    """Resolve a built-in model name (``mjcf/NAME.xml``) or a file path.

    Raises:
      ModelError: neither a built-in name nor an existing file.
    """
    text = os.fspath(name_or_path)
    builtin = mjcf.path(text)
    if "/" not in text and not text.endswith(".xml") and builtin.is_file():
        return builtin
    path = Path(text).expanduser()
    if path.is_file():
        return path.resolve()
    known = ", ".join(mjcf.names())
    raise ModelError(f"no model file {text!r} (not a file, and not a built-in model: {known})")


def as_model(model: mujoco.MjModel | str | os.PathLike) -> mujoco.MjModel:
    """``model`` itself, or the built-in name or MJCF/URDF path compiled (:func:`load_model`)."""
    return model if isinstance(model, mujoco.MjModel) else load_model(model)


def load_model(name_or_path: str | os.PathLike) -> mujoco.MjModel:
    """Compile an MJCF (or URDF) model from a built-in name (``"two_link_arm"``: ``mjcf/two_link_arm.xml``) or a path.

    Raises:
      ModelError: the file is missing, describes more than :data:`~crossdyn.experiments.core.limits.BODIES_MAX`
        bodies, or MuJoCo cannot compile it (the path and MuJoCo's first error line).
    """
    path = model_path(name_or_path)
    check_size(path)
    with compile_warnings(path) as warnings:
        try:
            model = mujoco.MjModel.from_xml_path(str(path))
        except ValueError as exc:  # MuJoCo reports parse and compile errors as ValueError.
            detail = " ".join(str(exc).split())
            raise ModelError(f"cannot compile {path}: {detail}") from None
    for text in warnings:
        _log.warning("%s: MuJoCo: %s", path, text)
    return model


def _count_bodies(path: Path, seen: frozenset = frozenset()) -> int:
    """Bodies an MJCF describes (``<replicate count>`` multiplying, ``<include>`` followed), or URDF links.

    One streaming pass over the XML: linear in the file's size, unlike MuJoCo's
    own parse.  A file that does not parse counts 0 (MuJoCo then reports it).
    """
    count, factors = 0, [1]
    try:
        for event, element in ET.iterparse(path, events=("start", "end")):
            tag = element.tag
            if event == "end":
                if tag == "replicate":
                    factors.pop()
                element.clear()  # keep memory flat on a large file
                continue
            if tag == "replicate":
                try:
                    factors.append(factors[-1] * max(int(element.get("count", "1")), 1))
                except ValueError:
                    factors.append(factors[-1])
            elif tag in ("body", "link"):
                count += factors[-1]
            elif tag == "include" and element.get("file"):
                child = (path.parent / element.get("file")).resolve()
                if child not in seen and child.is_file():
                    count += factors[-1] * _count_bodies(child, seen | {child})
    except (ET.ParseError, OSError):
        return count
    return count


def check_size(path: str | os.PathLike) -> None:
    """Refuse a model file describing more than :data:`~crossdyn.experiments.core.limits.BODIES_MAX` bodies, before
    MuJoCo spends minutes on it.

    Raises:
      ModelError: naming the count and the cap.
    """
    path = Path(path)
    count = _count_bodies(path, frozenset({path.resolve()}))
    if count > BODIES_MAX:
        raise ModelError(f"{path} describes {count:,} bodies; crossdyn compiles models of at most {BODIES_MAX:,} "
                         "(MuJoCo's compile time grows with the square of the count: 10,000 take about a second, "
                         "50,000 about a minute)")


@contextlib.contextmanager
def mujoco_warnings():
    """Collect MuJoCo's warnings instead of letting it print them: yields the list they are appended to,
    one line each.  (MuJoCo's default handler prints ``WARNING: ...`` to the terminal, beside crossdyn's
    own messages, and appends to ``MUJOCO_LOG.TXT`` in the working folder.)"""
    collected: list[str] = []
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(lambda text: collected.append(" ".join(str(text).split())))
    try:
        yield collected
    finally:
        mujoco.set_mju_user_warning(previous)


@contextlib.contextmanager
def compile_warnings(path: str | os.PathLike):
    """Collect MuJoCo's warnings while a model compiles (into the yielded list) instead of printing them.

    Raises:
      ModelError: MuJoCo found a NaN in the file (which it only warns about).
    """
    with mujoco_warnings() as collected:
        yield collected
    nan = [text for text in collected if "nan" in text.lower()]
    if nan:
        raise ModelError(f"{path} contains a NaN ({nan[0]}); MuJoCo only warns about it and may ignore the value, "
                         "so fix it in the file")


def with_options(model: mujoco.MjModel, *, fields: dict[str, float] | None = None, **options) -> mujoco.MjModel:
    """A copy of ``model`` with some of its ``opt`` fields (and model arrays) changed.

    Args:
      model: compiled model (left unchanged).
      fields: model arrays to fill with one value, e.g. ``{"dof_armature": 0.0}``;
        names this MuJoCo version lacks are skipped.
      **options: ``MjOption`` fields, e.g. ``timestep=5e-4``; ``None`` values are skipped.

    Raises:
      AttributeError: no such option field.
    """
    out = copy.copy(model)
    for name, value in options.items():
        if value is None:
            continue
        if not hasattr(out.opt, name):
            raise AttributeError(f"MjOption has no field {name!r}")
        setattr(out.opt, name, value)
    for name, value in (fields or {}).items():
        array = getattr(out, name, None)
        if array is not None:
            array[...] = value
    return out


def body_inertia(model: mujoco.MjModel, body: int | str, data: mujoco.MjData | None = None) -> np.ndarray:
    """Inertia tensor of one body about its CoM, ``(3, 3)``, kg m^2: ``R diag(body_inertia) R^T``.

    Args:
      model: compiled model.
      body: body id or name.
      data: if given, the tensor is in the world frame at ``data``'s pose (``R = ximat``);
        otherwise in the body frame (``R`` from ``body_iquat``).
    """
    bid = model.body(body).id
    R = data.ximat[bid].reshape(3, 3) if data is not None else quat_to_matrix(model.body_iquat[bid])
    return R @ np.diag(model.body_inertia[bid]) @ R.T
