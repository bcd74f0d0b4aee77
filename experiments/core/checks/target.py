"""The point a kinematics or Jacobian check is about: a site or a body of the model, its pose,
and the other points of the same body a derivation may have used by mistake."""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from ..errors import ParameterError
from .names import body_name

__all__ = ["Target", "target"]


@dataclass(frozen=True)
class Target:
    """A site or a body: ``kind`` (``"site"`` or ``"body"``), ``name``, id ``index``, the ``body`` it moves with."""

    kind: str
    name: str
    index: int
    body: int

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name!r}"

    def position(self, data: mujoco.MjData) -> np.ndarray:
        return data.site_xpos[self.index] if self.kind == "site" else data.xpos[self.index]

    def rotation(self, data: mujoco.MjData) -> np.ndarray:
        return (data.site_xmat[self.index] if self.kind == "site" else data.xmat[self.index]).reshape(3, 3)

    def alternatives(self, model: mujoco.MjModel) -> dict[str, tuple[str, int]]:
        """Other points of the same body, ``{words: (kind, index)}``: origin, CoM, other sites."""
        out = {}
        body = body_name(model, self.body)
        if self.kind != "body":
            out[f"the origin of body {body!r}"] = ("body", self.body)
        out[f"the centre of mass of body {body!r}"] = ("com", self.body)
        for s in np.flatnonzero(np.asarray(model.site_bodyid) == self.body):
            if not (self.kind == "site" and s == self.index):
                out[f"site {model.site(int(s)).name or f'#{s}'!r}"] = ("site", int(s))
        return out


def point_of(data: mujoco.MjData, kind: str, index: int) -> tuple[np.ndarray, np.ndarray]:
    """Position and rotation of ``("site"|"body"|"com", index)`` in ``data`` (after mj_kinematics)."""
    if kind == "site":
        return data.site_xpos[index], data.site_xmat[index].reshape(3, 3)
    if kind == "com":
        return data.xipos[index], data.ximat[index].reshape(3, 3)
    return data.xpos[index], data.xmat[index].reshape(3, 3)


def target(model: mujoco.MjModel, site: str | None = None, body: str | None = None) -> Target:
    """The site or body named (exactly one of ``site``, ``body``).

    Raises:
      ParameterError: neither or both given, or no such site or body (the message lists them).
    """
    if (site is None) == (body is None):
        raise ParameterError("give exactly one of a site (--site NAME) or a body (--body NAME)")
    kind, name = ("site", str(site)) if site is not None else ("body", str(body))
    obj = mujoco.mjtObj.mjOBJ_SITE if kind == "site" else mujoco.mjtObj.mjOBJ_BODY
    index = mujoco.mj_name2id(model, obj, name)
    if index < 0 or (kind == "body" and index == 0):
        count = model.nsite if kind == "site" else model.nbody
        known = [mujoco.mj_id2name(model, obj, i) for i in range(1 if kind == "body" else 0, count)]
        known = [k for k in known if k]
        shown = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
        plural = {"body": "bodies"}.get(kind, f"{kind}s")
        raise ParameterError(f"no {kind} {name!r} in the model (its {plural}: {shown or 'none'})")
    owner = int(model.site_bodyid[index]) if kind == "site" else index
    return Target(kind, name, index, owner)
