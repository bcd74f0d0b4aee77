"""Inertia tensors of simple solids: the appendix table of a robotics lecture on dynamics
(docs/derivations/inertia.md).

Each function returns the principal tensor, a ``(3, 3)`` diagonal, kg m^2, about the point the formula names
(the centre unless the name says otherwise), a symmetry axis along z; masses in kg, lengths in m.
"""

from __future__ import annotations

import numpy as np

__all__ = ["solid_sphere", "spherical_shell", "ellipsoid", "box", "rod_centre", "rod_end", "solid_cone_apex",
           "solid_cone_centroid", "parallel_axis"]


def _positive(**values) -> None:
    for name, value in values.items():
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be positive and finite, got {value!r}")


def solid_sphere(m: float, r: float) -> np.ndarray:
    """Solid sphere of radius r: 2/5 m r^2 about every axis through the centre."""
    _positive(m=m, r=r)
    return np.eye(3) * (2.0 / 5.0 * m * r**2)


def spherical_shell(m: float, r: float) -> np.ndarray:
    """Thin spherical shell of radius r: 2/3 m r^2 about every axis through the centre."""
    _positive(m=m, r=r)
    return np.eye(3) * (2.0 / 3.0 * m * r**2)


def ellipsoid(m: float, a: float, b: float, c: float) -> np.ndarray:
    """Solid ellipsoid, semi-axes a, b, c along x, y, z: m/5 (b^2+c^2, a^2+c^2, a^2+b^2)."""
    _positive(m=m, a=a, b=b, c=c)
    return np.diag([b**2 + c**2, a**2 + c**2, a**2 + b**2]) * (m / 5.0)


def box(m: float, w: float, h: float, d: float) -> np.ndarray:
    """Solid box, full sizes w, h, d along x, y, z: m/12 (h^2+d^2, w^2+d^2, w^2+h^2)."""
    _positive(m=m, w=w, h=h, d=d)
    return np.diag([h**2 + d**2, w**2 + d**2, w**2 + h**2]) * (m / 12.0)


def rod_centre(m: float, length: float) -> np.ndarray:
    """Thin rod of length l along z, about its centre: m l^2/12 transverse, 0 axial."""
    _positive(m=m, length=length)
    return np.diag([1.0, 1.0, 0.0]) * (m * length**2 / 12.0)


def rod_end(m: float, length: float) -> np.ndarray:
    """Thin rod of length l along z, about one end: m l^2/3 transverse, 0 axial."""
    _positive(m=m, length=length)
    return np.diag([1.0, 1.0, 0.0]) * (m * length**2 / 3.0)


def solid_cone_apex(m: float, h: float, r: float) -> np.ndarray:
    """Solid cone (height h along z, base radius r) about its apex: 3/5 m h^2 + 3/20 m r^2 transverse,
    3/10 m r^2 axial."""
    _positive(m=m, h=h, r=r)
    transverse = 3.0 / 5.0 * m * h**2 + 3.0 / 20.0 * m * r**2
    return np.diag([transverse, transverse, 3.0 / 10.0 * m * r**2])


def solid_cone_centroid(m: float, h: float, r: float) -> np.ndarray:
    """The same cone about its centroid, 3 h / 4 from the apex: 3/80 m h^2 + 3/20 m r^2 transverse, 3/10 m r^2
    axial (what a simulator's body inertia, about the CoM, is compared with)."""
    # The apex is 3h/4 from the centroid; the theorem run backwards (mass -m).
    return parallel_axis(solid_cone_apex(m, h, r), -m, [0.0, 0.0, 0.75 * h])


def parallel_axis(inertia_com, m: float, offset) -> np.ndarray:
    """Inertia about a point ``offset`` ``(3,)`` m from the CoM, ``inertia_com + m (|d|^2 E - d d^T)``, kg m^2
    (parallel-axis theorem); ``-m`` runs it backwards, from that point to the CoM."""
    d = np.asarray(offset, dtype=float)
    return np.asarray(inertia_com, dtype=float) + m * (d @ d * np.eye(3) - np.outer(d, d))
