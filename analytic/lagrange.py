"""The Lagrange recipe of an article on robot dynamics, in SymPy, compiled to NumPy (docs/derivations/lagrange.md).

From the CoM positions ``p_ci(q)`` and angular velocities ``w_i(q, qd)``: ``M`` is the Hessian of ``T`` in
``qd``, ``c`` comes from the Christoffel symbols ``C_k`` of the first kind, ``g = dU/dq``, so
``tau = M qdd + c + g``; the Christoffel matrix ``C`` gives ``c = C qd`` and a skew-symmetric ``Mdot - 2C``.
Worked examples: the prismatic-revolute arm of the article (:func:`pr_arm`) and the two-link arm (:func:`rr_arm`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import sympy as sp

__all__ = ["LagrangeModel", "derive", "pr_arm", "rr_arm", "rr_closed_form"]


@dataclass(frozen=True)
class LagrangeModel:
    """A symbolic model ``tau = M qdd + c + g`` and its compiled NumPy forms.

    Attributes:
      q, qd: coordinate and velocity symbols, length n each.
      params: physical-parameter symbols (the numeric functions take their values by name).
      T, U: kinetic and potential energy, J.
      M, C: mass and Christoffel matrices, ``n x n`` (``c = C qd``).
      christoffel: ``C_k`` for k = 1..n, each ``n x n``.
      c, g: velocity and gravity terms, ``n x 1``.
    """

    q: tuple[sp.Symbol, ...]
    qd: tuple[sp.Symbol, ...]
    params: tuple[sp.Symbol, ...]
    T: sp.Expr
    U: sp.Expr
    M: sp.Matrix
    christoffel: tuple[sp.Matrix, ...]
    C: sp.Matrix
    c: sp.Matrix
    g: sp.Matrix

    @property
    def n(self) -> int:
        return len(self.q)

    @property
    def Mdot(self) -> sp.Matrix:
        """``dM/dt = sum_i dM/dq_i qd_i``."""
        terms = (sp.diff(self.M, qi) * qdi for qi, qdi in zip(self.q, self.qd, strict=True))
        return sum(terms, sp.zeros(self.n, self.n))

    def _compile(self, expr: sp.Matrix, values: Mapping[str, float]) -> Callable:
        """NumPy function ``(q (..., n), qd (..., n)) -> expr (..., rows, cols)``."""
        missing = [s.name for s in self.params if s.name not in values]
        if missing:
            raise ValueError(f"missing parameter value(s): {', '.join(missing)}")
        expr = expr.subs({s: float(values[s.name]) for s in self.params})
        fn = sp.lambdify(self.q + self.qd, list(expr), modules="numpy")
        shape = expr.shape

        def evaluate(q, qd=None):
            q = np.asarray(q, dtype=float)
            qd = np.zeros_like(q) if qd is None else np.asarray(qd, dtype=float)
            for name, a in (("q", q), ("qd", qd)):
                if a.ndim == 0 or a.shape[-1] != self.n:
                    raise ValueError(f"{name} must have shape (..., {self.n}), got {a.shape}")
            batch = np.broadcast_shapes(q.shape[:-1], qd.shape[:-1])
            entries = fn(*np.moveaxis(q, -1, 0), *np.moveaxis(qd, -1, 0))
            # lambdify returns bare scalars for constant entries: broadcast them.
            out = np.stack([np.broadcast_to(np.asarray(e, dtype=float), batch) for e in entries], axis=-1)
            return out.reshape(batch + shape)

        return evaluate

    def numeric(self, values: Mapping[str, float]) -> dict[str, Callable]:
        """Compiled ``M(q)``, ``C(q, qd)``, ``c(q, qd)``, ``g(q)``, ``Mdot(q, qd)`` for parameter ``values`` by
        symbol name (SI): functions of ``q, qd (..., n)`` giving ``(..., n, n)`` or ``(..., n)``."""
        M, C, Md = (self._compile(e, values) for e in (self.M, self.C, self.Mdot))
        c, g = self._compile(self.c, values), self._compile(self.g, values)
        return {
            "M": lambda q: M(q),
            "C": C,
            "Mdot": Md,
            "c": lambda q, qd: c(q, qd)[..., 0],
            "g": lambda q: g(q)[..., 0],
        }

    def inverse_dynamics(self, values: Mapping[str, float]) -> Callable:
        """``tau(q, qd, qdd) = M qdd + c + g`` as a batched NumPy function, ``(..., n)``."""
        f = self.numeric(values)

        def tau(q, qd, qdd):
            q, qd, qdd = (np.asarray(a, dtype=float) for a in (q, qd, qdd))
            return np.einsum("...ij,...j->...i", f["M"](q), qdd) + f["c"](q, qd) + f["g"](q)

        return tau


def derive(
    q: Sequence[sp.Symbol],
    qd: Sequence[sp.Symbol],
    masses: Sequence[sp.Expr],
    coms: Sequence[sp.Matrix],
    omegas: Sequence[sp.Matrix],
    inertias: Sequence[sp.Matrix],
    gravity: sp.Matrix,
    params: Sequence[sp.Symbol],
) -> LagrangeModel:
    """The Lagrange recipe: ``T``, ``U`` -> ``M``, ``C_k``, ``C``, ``c``, ``g``.

    Args:
      q, qd: coordinate and velocity symbols.
      masses: link masses m_i.
      coms: CoM positions ``p_ci(q)``, 3 x 1 each (world).
      omegas: angular velocities ``w_i(q, qd)``, 3 x 1 each, in the frame where
        ``inertias`` are given.
      inertias: inertia tensors about each CoM, 3 x 3.
      gravity: gravitational acceleration, 3 x 1 (``U = -sum m_i gravity . p_ci``).
      params: the physical-parameter symbols, for compiling.
    """
    q, qd = tuple(q), tuple(qd)
    qv, qdv = sp.Matrix(q), sp.Matrix(qd)
    T = sp.Integer(0)
    U = sp.Integer(0)
    for m, p, w, inertia in zip(masses, coms, omegas, inertias, strict=True):
        v = p.jacobian(qv) * qdv
        T += sp.Rational(1, 2) * m * (v.T * v)[0] + sp.Rational(1, 2) * (w.T * inertia * w)[0]
        U += -m * (gravity.T * p)[0]
    n = len(q)
    M = sp.simplify(sp.hessian(T, qd))
    christoffel = []
    for k in range(n):
        dMk = M[:, k].jacobian(qv)
        christoffel.append(sp.simplify(sp.Rational(1, 2) * (dMk + dMk.T - sp.diff(M, q[k]))))
    C = sp.Matrix(n, n, lambda k, j: sp.simplify(sum(qd[i] * christoffel[k][i, j] for i in range(n))))
    c = sp.Matrix([sp.simplify((qdv.T * christoffel[k] * qdv)[0]) for k in range(n)])
    g = sp.simplify(sp.Matrix([sp.diff(U, qi) for qi in q]))
    return LagrangeModel(q, qd, tuple(params), sp.simplify(T), sp.simplify(U), M, tuple(christoffel), C, c, g)


def pr_arm() -> LagrangeModel:
    """The worked PR arm of the article: a slide along x, then a hinge about z; planar, no gravity.
    Parameters ``m1, m2`` (kg), ``dc1, dc2`` (m), ``I2zz`` (kg m^2)."""
    q1, q2, qd1, qd2 = sp.symbols("q1 q2 qd1 qd2", real=True)
    m1, m2, dc1, dc2, i2zz = sp.symbols("m1 m2 dc1 dc2 I2zz", positive=True)
    zero = sp.zeros(3, 1)
    return derive(
        (q1, q2),
        (qd1, qd2),
        masses=(m1, m2),
        coms=(sp.Matrix([q1 - dc1, 0, 0]), sp.Matrix([q1 + dc2 * sp.cos(q2), dc2 * sp.sin(q2), 0])),
        omegas=(zero, sp.Matrix([0, 0, qd2])),
        inertias=(sp.zeros(3, 3), sp.diag(0, 0, i2zz)),
        gravity=zero,
        params=(m1, m2, dc1, dc2, i2zz),
    )


def rr_arm() -> LagrangeModel:
    """The two-link RR arm by the recipe (x-y plane, gravity -y, q = 0 hanging); its symbols are named like
    ``TwoLinkParams`` fields, so ``numeric(vars(params))`` works."""
    q1, q2, qd1, qd2 = sp.symbols("q1 q2 qd1 qd2", real=True)
    l1, m1, m2, p1, p2, i1, i2, g = sp.symbols("l1 m1 m2 p1 p2 i1 i2 g", positive=True)
    return derive(
        (q1, q2),
        (qd1, qd2),
        masses=(m1, m2),
        coms=(
            sp.Matrix([p1 * sp.sin(q1), -p1 * sp.cos(q1), 0]),
            sp.Matrix([l1 * sp.sin(q1) + p2 * sp.sin(q1 + q2), -l1 * sp.cos(q1) - p2 * sp.cos(q1 + q2), 0]),
        ),
        omegas=(sp.Matrix([0, 0, qd1]), sp.Matrix([0, 0, qd1 + qd2])),
        inertias=(sp.diag(0, 0, i1), sp.diag(0, 0, i2)),
        gravity=sp.Matrix([0, -g, 0]),
        params=(l1, m1, m2, p1, p2, i1, i2, g),
    )


def rr_closed_form(model: LagrangeModel) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
    """The two-link closed form ``(D, velocity terms, gravity)`` in the symbols of ``model`` (an :func:`rr_arm`),
    written independently of the recipe, so ``simplify(recipe - closed form) == 0`` is a real check."""
    q1, q2 = model.q
    qd1, qd2 = model.qd
    l1, m1, m2, p1, p2, i1, i2, g = model.params
    h = m2 * l1 * p2 * sp.sin(q2)
    d11 = m1 * p1**2 + i1 + m2 * (l1**2 + p2**2 + 2 * l1 * p2 * sp.cos(q2)) + i2
    d12 = m2 * (p2**2 + l1 * p2 * sp.cos(q2)) + i2
    d22 = m2 * p2**2 + i2
    D = sp.Matrix([[d11, d12], [d12, d22]])
    velocity = sp.Matrix([-2 * h * qd1 * qd2 - h * qd2**2, h * qd1**2])
    gravity = sp.Matrix([(m1 * p1 + m2 * l1) * g * sp.sin(q1) + m2 * g * p2 * sp.sin(q1 + q2),
                         m2 * g * p2 * sp.sin(q1 + q2)])
    return D, velocity, gravity
