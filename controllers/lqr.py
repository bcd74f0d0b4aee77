"""LQR design for any ``(A, B)``: continuous, discrete, and gain schedules with their C export.

:func:`lqr` designs ``u = -K x`` on a continuous-time ``(A, B)``, :func:`dlqr` on a discrete one
such as MuJoCo's ``mjd_transitionFD``, both through python-control, and refuse bad weights or a
closed loop that is not stable.  :func:`schedule` tabulates the gain ``K (nu, nx)`` of a design
over a scheduling variable (a leg's length, m, for the biped's balance and its free-hip model) and
fits each entry with a polynomial; :meth:`GainSchedule.to_c` writes the fit and the table as a C
header for firmware.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from math import isfinite
from pathlib import Path

import numpy as np
from threadpoolctl import ThreadpoolController

__all__ = ["LQRDesign", "lqr", "dlqr", "GainSchedule", "schedule", "SMALL_SYSTEM"]


@dataclass(frozen=True)
class LQRDesign:
    """An LQR design: gain ``K`` ``(nu, nx)`` (``u = -K x``), Riccati solution ``S`` ``(nx, nx)`` (optimal
    cost ``x0' S x0``), closed-loop ``poles`` (s- or z-plane), the weights ``Q``, ``R``, and ``discrete``."""

    K: np.ndarray
    S: np.ndarray
    poles: np.ndarray
    Q: np.ndarray
    R: np.ndarray
    discrete: bool = False

    def cost(self, x0) -> float:
        """Predicted optimal cost ``x0' S x0`` (python-control's convention)."""
        x0 = np.asarray(x0, dtype=float)
        return float(x0 @ self.S @ x0)


def _weights(Q, R, nx: int, nu: int) -> tuple[np.ndarray, np.ndarray]:
    Q = np.atleast_2d(np.asarray(Q, dtype=float))
    R = np.atleast_2d(np.asarray(R, dtype=float))
    if Q.shape == (1, nx):
        Q = np.diag(Q[0])
    if R.shape == (1, nu):
        R = np.diag(R[0])
    if Q.shape != (nx, nx) or R.shape != (nu, nu):
        raise ValueError(f"Q must be ({nx}, {nx}) or a diagonal of {nx}, R ({nu}, {nu}); got {Q.shape}, {R.shape}")
    if not (np.isfinite(Q).all() and np.isfinite(R).all()):
        raise ValueError("LQR weights must be finite")
    if np.linalg.eigvalsh((Q + Q.T) / 2).min() < 0:
        raise ValueError(f"Q must be positive semi-definite; its smallest eigenvalue is "
                         f"{np.linalg.eigvalsh(Q).min():.3g}")
    if np.linalg.eigvalsh((R + R.T) / 2).min() <= 0:
        raise ValueError("R must be positive definite (a weight on every input)")
    return Q, R


def lqr(A, B, Q, R) -> LQRDesign:
    """Continuous-time LQR via ``control.lqr``.

    Args:
      A: ``(nx, nx)``; B: ``(nx, nu)``.
      Q: ``(nx, nx)`` or its diagonal ``(nx,)``; R: ``(nu, nu)``, its diagonal, or a scalar.

    Raises:
      ValueError: bad weights, or a closed loop that is not stable (e.g. an
        unstabilizable pair).
    """
    return _design(A, B, Q, R, discrete=False)


def dlqr(A_d, B_d, Q, R) -> LQRDesign:
    """Discrete-time LQR via ``control.dlqr`` (e.g. on MuJoCo's linearization).

    Raises:
      ValueError: bad weights, or closed-loop poles not inside the unit circle.
    """
    return _design(A_d, B_d, Q, R, discrete=True)


# Below this many states a Riccati solve runs BLAS single-threaded: threads only cost on small matrices, and
# OpenBLAS's idle threads keep a second core spinning after every solve (docs/guides/speed.md).
SMALL_SYSTEM = 64


@functools.cache
def _blas():
    """threadpoolctl's view of the loaded BLAS libraries, inspected once per process."""
    return ThreadpoolController()


def _design(A, B, Q, R, discrete: bool) -> LQRDesign:
    import control  # here, not at the top: python-control's import (SciPy's signal and stats) costs every command

    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    Q, R = _weights(Q, R, A.shape[0], B.shape[1])
    kind = "discrete LQR" if discrete else "LQR"
    solve = control.dlqr if discrete else control.lqr
    try:
        if A.shape[0] < SMALL_SYSTEM:
            with _blas().limit(limits=1, user_api="blas"):
                K, S, E = solve(A, B, Q, R)
        else:
            K, S, E = solve(A, B, Q, R)
    except (ValueError, np.linalg.LinAlgError, control.ControlArgument) as exc:
        raise ValueError(f"{kind} design failed: {exc}") from None
    E = np.asarray(E)
    stable = np.max(np.abs(E)) < 1 if discrete else np.max(E.real) < 0
    if not stable:
        raise ValueError(f"{kind} closed loop is not stable: poles {np.round(E, 4)}")
    return LQRDesign(np.asarray(K), np.asarray(S), E, Q, R, discrete=discrete)


@dataclass(frozen=True)
class GainSchedule:
    """LQR gains tabulated over leg length and fitted with a polynomial per entry, for any ``K (nu, nx)``.

    Attributes:
      lengths, gains: the table, ``(n,)`` m (increasing) and ``(n, nu, nx)``.
      coeffs: per gain entry, ``(degree + 1, nu, nx)``, highest power first (``np.polyval`` order).
      fit_error: largest ``|K_fit - K_table|``, relative to that entry's largest magnitude in the table.
      state_names, input_names: the design's state and input, in ``K``'s column and row order (for the C
        header's comment; empty: not given).
    """

    lengths: np.ndarray
    gains: np.ndarray
    coeffs: np.ndarray
    fit_error: float
    state_names: tuple[str, ...] = ()
    input_names: tuple[str, ...] = ()

    def __call__(self, length: float) -> np.ndarray:
        """Gain ``(nu, nx)`` at a leg length, clamped to the tabulated range."""
        return np.array(self.row(length)).reshape(self.coeffs.shape[1:])

    def row(self, length: float) -> tuple[float, ...]:
        """The gain at a leg length as a flat tuple of floats (``K.ravel()``), clamped to the range: the
        per-step path, Horner's rule in plain floats (the same operations as on the arrays).

        Raises:
          ValueError: a non-finite length.
        """
        if not isfinite(length):
            raise ValueError(f"leg length must be finite, got {length}")
        length = min(max(float(length), self._low), self._high)
        if self._cubic is not None:  # the default degree, written out: ((c0 l + c1) l + c2) l + c3 per entry
            return tuple(((c0 * length + c1) * length + c2) * length + c3 for c0, c1, c2, c3 in self._cubic)
        gains = list(self._powers[0])
        for c in self._powers[1:]:  # highest power first
            gains = [k * length + ck for k, ck in zip(gains, c, strict=True)]
        return tuple(gains)

    def to_c(self, path: str | os.PathLike, name: str) -> Path:
        """Write the schedule as a C header for firmware: the fitted coefficients and the table, in float.

        The header defines, for the C identifier ``name`` (``NAME`` its upper case): ``NAME_INPUTS`` (``nu``),
        ``NAME_STATES`` (``nx``), ``NAME_DEGREE``, ``NAME_TABLE`` (the table's length), ``NAME_LENGTH_MIN`` and
        ``NAME_LENGTH_MAX`` (m, the fitted range); ``name_coeffs[DEGREE + 1][INPUTS][STATES]`` (highest power
        first: ``K(l)`` is Horner's rule over them, ``l`` clamped to the range); ``name_lengths[TABLE]`` (m) and
        ``name_table[TABLE][INPUTS][STATES]``.  A comment gives the state and input order and the law
        ``u = -K(l) (x - x_ref)``.  Numbers are printed with 9 significant digits, enough to round-trip a float.

        Raises:
          ValueError: ``name`` is not a C identifier.
        """
        if not re.fullmatch(r"[A-Za-z_]\w*", name or ""):
            raise ValueError(f"name {name!r} is not a C identifier")
        path = Path(path)
        path.write_text(self.c_header(name, path.name))
        return path

    def c_header(self, name: str, filename: str = "") -> str:
        """The text :meth:`to_c` writes."""
        upper = name.upper()
        nu, nx = self.coeffs.shape[1:]
        degree = self.coeffs.shape[0] - 1
        guard = re.sub(r"\W", "_", (filename or f"{name}.h").upper())
        states = ", ".join(self.state_names) if self.state_names else f"{nx} states"
        inputs = ", ".join(self.input_names) if self.input_names else f"{nu} inputs"

        def number(value) -> str:
            text = f"{float(value):.9g}"  # nine digits round-trip a float
            return (text if any(c in text for c in ".e") else text + ".0") + "f"  # "0f" is no C float

        def numbers(array: np.ndarray) -> str:
            if array.ndim == 1:
                return "{" + ", ".join(number(v) for v in array) + "}"
            return "{" + ", ".join(numbers(a) for a in array) + "}"

        lines = [
            f"/* {filename or name + '.h'}: a gain schedule K(l) over leg length l, written by crossdyn",
            " * (GainSchedule.to_c).  The law is u = -K(l) (x - x_ref) with",
            f" *   x = [{states}]",
            f" *   u = [{inputs}]",
            f" * K(l) has {nu} rows (inputs) and {nx} columns (states): each entry a degree-{degree} polynomial in l",
            " * (m), highest power first, fitted to the LQR designs tabulated below (largest fit error",
            f" * {self.fit_error:.2g} of an entry's size); evaluate it with l clamped to [LENGTH_MIN, LENGTH_MAX]. */",
            f"#ifndef {guard}",
            f"#define {guard}",
            "",
            f"#define {upper}_INPUTS {nu}",
            f"#define {upper}_STATES {nx}",
            f"#define {upper}_DEGREE {degree}",
            f"#define {upper}_TABLE {len(self.lengths)}",
            f"#define {upper}_LENGTH_MIN {number(self.lengths[0])}",
            f"#define {upper}_LENGTH_MAX {number(self.lengths[-1])}",
            "",
            f"static const float {name}_coeffs[{upper}_DEGREE + 1][{upper}_INPUTS][{upper}_STATES] =",
            f"    {numbers(self.coeffs)};",
            f"static const float {name}_lengths[{upper}_TABLE] = {numbers(self.lengths)};",
            f"static const float {name}_table[{upper}_TABLE][{upper}_INPUTS][{upper}_STATES] =",
            f"    {numbers(self.gains)};",
            "",
            f"#endif /* {guard} */",
            "",
        ]
        return "\n".join(lines)

    # Plain-float copies for ``row``, made on first use: the range, the coefficients per power, a cubic per entry.

    @functools.cached_property
    def _low(self) -> float:
        return float(self.lengths[0])

    @functools.cached_property
    def _high(self) -> float:
        return float(self.lengths[-1])

    @functools.cached_property
    def _powers(self) -> tuple[tuple[float, ...], ...]:
        return tuple(tuple(c.ravel().tolist()) for c in self.coeffs)

    @functools.cached_property
    def _cubic(self) -> tuple[tuple[float, ...], ...] | None:
        return tuple(zip(*self._powers, strict=True)) if len(self._powers) == 4 else None


def schedule(linearize: Callable[[float], tuple[np.ndarray, np.ndarray]], lengths, Q, R,
             degree: int = 3, *, state_names=(), input_names=()) -> GainSchedule:
    """Design an LQR at each leg length and fit each gain entry with a polynomial.

    Args:
      linearize: ``l -> (A, B)``, ``(nx, nx)`` and ``(nx, nu)`` (e.g.
        ``functools.partial(wheeled_pendulum.linearize_pendulum, params)``, or the free-hip model's).
      lengths: increasing leg lengths, ``(n,)``, m; ``n > degree``.
      Q, R: LQR weights (see :func:`lqr`); degree: the fit's polynomial degree.
      state_names, input_names: the state's and input's names, in order (kept for :meth:`GainSchedule.to_c`).

    Raises:
      ValueError: bad lengths, weights or names, or a design that fails at some length.
    """
    lengths = np.asarray(lengths, dtype=float)
    if lengths.ndim != 1 or lengths.size <= degree or np.any(np.diff(lengths) <= 0):
        raise ValueError(f"lengths must be increasing with more than {degree} entries, got {lengths}")
    gains = np.array([lqr(*linearize(length), Q, R).K for length in lengths])
    nu, nx = gains.shape[1:]
    for what, names, size in (("state_names", state_names, nx), ("input_names", input_names, nu)):
        if names and len(names) != size:
            raise ValueError(f"{what} must name all {size} entries, got {len(names)}: {list(names)}")
    flat = gains.reshape(len(lengths), -1)
    coeffs = np.polyfit(lengths, flat, degree)
    fitted = np.array([np.polyval(coeffs[:, k], lengths) for k in range(flat.shape[1])]).T
    scale = np.maximum(np.abs(flat).max(axis=0), np.finfo(float).tiny)
    fit_error = float((np.abs(fitted - flat) / scale).max())
    return GainSchedule(lengths, gains, coeffs.reshape((degree + 1,) + gains.shape[1:]), fit_error,
                        tuple(state_names), tuple(input_names))
