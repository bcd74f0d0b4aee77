"""A planar two-link arm read from its MJCF: the parameters of the closed form, and every way a model departs.

Shared by the systems that check derivations of the arm (``two_link``, ``lagrange``).
"""

from __future__ import annotations

import mujoco
import numpy as np

from ...analytic.two_link import TwoLinkParams
from ..core.errors import ModelError

__all__ = ["two_link_params"]

# Geometric tolerance for "planar" and "parallel": far above round-off, far below a typed MJCF number's digits.
_GEOM_TOL = 1e-9
_CONVENTION = "see docs/derivations/two-link.md, 'Conventions'"
_ELSEWHERE = ("for an arm drawn in another convention, check your own derivation with "
              "'crossdyn check derivation FILE.py:FUNC --mjcf MODEL' "
              "(docs/guides/check-derivation.md)")


def two_link_params(model: mujoco.MjModel) -> TwoLinkParams:
    """Read a planar two-link arm's parameters from a compiled model in the closed form's convention.

    Two hinges in a chain from the world, axes along world +z, gravity along -y, both links hanging
    straight down at ``q = 0``, each CoM on its link.  ``l1`` is the distance between the anchors, ``l2``
    from joint 2 to a site ``tip`` on link 2 if there is one, else ``2 p2``; ``i_k`` is about world z.

    Raises:
      ModelError: naming every way the model departs from the convention at once, with the values found.
    """
    structure = _chain_problems(model)
    problems = structure + _frame_problems(model)
    if structure:  # without two hinges in a chain there is no geometry to read
        raise ModelError(_violations(problems))
    b1, b2 = int(model.jnt_bodyid[0]), int(model.jnt_bodyid[1])
    problems += _extra_mass_problems(model, (b1, b2))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)  # at qpos0: the reference pose
    problems += _plane_problems(model, data, (b1, b2))
    (l1, l2, p1, p2), line_problems = _lengths(model, data, (b1, b2))
    problems += line_problems
    if problems:
        raise ModelError(_violations(problems))

    def inertia_zz(body):
        rot = data.ximat[body].reshape(3, 3)
        return float((rot @ np.diag(model.body_inertia[body]) @ rot.T)[2, 2])

    return TwoLinkParams(l1=l1, l2=l2, m1=float(model.body_mass[b1]), m2=float(model.body_mass[b2]), p1=p1, p2=p2,
                         i1=inertia_zz(b1), i2=inertia_zz(b2), g=float(np.linalg.norm(model.opt.gravity)))


# The problems two_link_params reports, each a list of one-line strings in the order they are met.


def _chain_problems(model: mujoco.MjModel) -> list[str]:
    """Two hinge joints in a chain world -> link 1 -> link 2."""
    problems = []
    if model.njnt != 2 or model.nv != 2:
        problems.append(f"a two-link arm needs exactly 2 joints, this model has {model.njnt} (nv={model.nv})")
    for j in range(min(model.njnt, 2)):
        if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
            kind = mujoco.mjtJoint(model.jnt_type[j]).name
            problems.append(f"joint {model.joint(j).name!r} is {kind}; a two-link arm needs two hinge joints")
    if model.njnt >= 2:
        b1, b2 = int(model.jnt_bodyid[0]), int(model.jnt_bodyid[1])
        if model.body_parentid[b1] != 0 or model.body_parentid[b2] != b1:
            problems.append("the two joints must form a chain world -> link 1 -> link 2")
    return problems


def _frame_problems(model: mujoco.MjModel) -> list[str]:
    """Gravity along -y and the hanging pose at ``qpos0 = 0``."""
    problems = []
    gravity = np.array(model.opt.gravity)
    g = float(np.linalg.norm(gravity))
    if g == 0 or np.linalg.norm(gravity / g - [0.0, -1.0, 0.0]) > _GEOM_TOL:
        problems.append(f"gravity must point along -y, this model has gravity={gravity.tolist()}")
    if np.any(model.qpos0 != 0):
        problems.append(f"qpos0 must be zero (the hanging pose), found {model.qpos0.tolist()}")
    return problems


def _extra_mass_problems(model: mujoco.MjModel, links: tuple[int, int]) -> list[str]:
    """No mass outside the two links."""
    others = np.ones(model.nbody, dtype=bool)
    others[list(links)] = False
    other_mass = float(model.body_mass[others].sum())
    if other_mass > 0:
        return [f"bodies other than the two links carry {other_mass:g} kg; the closed form has two bodies"]
    return []


def _plane_problems(model: mujoco.MjModel, data: mujoco.MjData, links: tuple[int, int]) -> list[str]:
    """Both axes along world +z, joint 2 and both CoMs in joint 1's plane (``data`` at ``qpos0``)."""
    problems = []
    for j in range(2):
        axis = data.xaxis[j]
        if abs(abs(axis[2]) - 1.0) > _GEOM_TOL:
            problems.append(f"joint {model.joint(j).name!r} axis is {axis.round(6).tolist()} in the world; "
                            "it must be +z")
        elif axis[2] < 0:
            problems.append(f"joint {model.joint(j).name!r} axis is -z; the convention takes +z "
                            "(counter-clockwise positive)")
    anchor1 = data.xanchor[0]
    for name, point in (("joint 2 anchor", data.xanchor[1]), ("link 1 CoM", data.xipos[links[0]]),
                        ("link 2 CoM", data.xipos[links[1]])):
        if abs(point[2] - anchor1[2]) > _GEOM_TOL:
            problems.append(f"{name} is off the arm's plane by {point[2] - anchor1[2]:.3g} m in z")
    return problems


_DOWN = np.array([0.0, -1.0, 0.0])  # the links' direction at q = 0


def _along(point: np.ndarray, origin: np.ndarray, name: str) -> tuple[float, list[str]]:
    """``point``'s distance from ``origin`` down the hanging link (m), and a problem if it is off that line."""
    offset = point - origin
    lateral = offset - (offset @ _DOWN) * _DOWN
    problems = []
    if np.linalg.norm(lateral) > 1e-6:
        problems.append(f"{name} is {np.linalg.norm(lateral):.3g} m off the link's line at q = 0; "
                        "the closed form needs each CoM on its link")
    return float(offset @ _DOWN), problems


def _lengths(model: mujoco.MjModel, data: mujoco.MjData,
             links: tuple[int, int]) -> tuple[tuple[float, float, float, float], list[str]]:
    """``(l1, l2, p1, p2)``, m, read at the hanging pose, and the problems met reading them."""
    problems = []
    anchor1, anchor2 = data.xanchor[0], data.xanchor[1]
    link1 = anchor2 - anchor1
    l1 = float(np.linalg.norm(link1))
    if l1 == 0:
        problems.append("joint 2 sits on joint 1's axis; link 1 has zero length")
    elif np.linalg.norm(link1 / l1 - _DOWN) > 1e-6:
        problems.append("at q = 0 link 1 must hang straight down (-y), it points along "
                        f"{(link1 / l1).round(6).tolist()}")
    p1, off_line = _along(data.xipos[links[0]], anchor1, "link 1 CoM")
    problems += off_line
    p2, off_line = _along(data.xipos[links[1]], anchor2, "link 2 CoM")
    problems += off_line
    l2 = 2.0 * p2
    if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, "tip") >= 0:
        tip = model.site("tip")
        if model.site_bodyid[tip.id] != links[1]:
            problems.append("site 'tip' must be on link 2")
        else:
            l2, off_line = _along(data.site_xpos[tip.id], anchor2, "site 'tip'")
            problems += off_line
    return (l1, l2, p1, p2), problems


def _violations(problems: list[str]) -> str:
    """Every convention violation in one line, then where to look and what else to use."""
    count = f"{len(problems)} departure{'s' if len(problems) != 1 else ''} from the two-link convention"
    return f"{count} ({_CONVENTION}): " + "; ".join(problems) + f". {_ELSEWHERE[0].upper()}{_ELSEWHERE[1:]}."
