"""Is an error a change of some bodies' inertial parameters?  Say which, in the user's terms.

Inverse dynamics is linear in each body's ten inertial parameters, ``tau = Y pi``
(crossdyn's own regressor), so :func:`explain` fits the change by least squares: all
bodies at once (a residual above tolerance: not inertial), then sets of up to three
bodies at each level of the user's terms, keeping the fit that changes the fewest
parameters the states can tell apart.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from threadpoolctl import threadpool_limits

from ....analytic.regressor import body_properties, inertial_parameters
from ....analytic.rnea import Tree

__all__ = ["explain", "explains", "LARGEST_SET"]

# The largest set of bodies tried together (all sets of one, two, three bodies);
# above 20 bodies only sets of one and two (a few hundred small least squares).
LARGEST_SET = 3
# A parameter "agrees" if the fit moves it by less than this fraction of its
# size (plus round-off): unchanged parameters come out at ~1e-12 of their size.
_AGREE = 1e-7


def _fit(A: np.ndarray, error: np.ndarray, tol: np.ndarray) -> tuple[bool, np.ndarray, float, int]:
    """Least squares on scaled columns: (within tolerance everywhere, solution, worst residual, rank)."""
    norms = np.linalg.norm(A, axis=0)
    keep = norms > 0
    x = np.zeros(A.shape[1])
    if not keep.any():
        return bool(np.all(np.abs(error) <= tol)), x, float(np.abs(error).max()), 0
    scaled = A[:, keep] / norms[keep]
    sol, _, rank, _ = np.linalg.lstsq(scaled, error, rcond=None)
    x[keep] = sol / norms[keep]
    residual = error - A @ x
    return bool(np.all(np.abs(residual) <= tol)), x, float(np.abs(residual).max()), int(rank)


# An error this large is no inertial parameter's (and its squares overflow a least-squares fit).
HUGE = 1e100


def _vector(v, floor: float = 0.0) -> str:
    """``[a, b, c]`` to 4 digits; entries under ``floor`` (round-off) print as 0."""
    return "[" + ", ".join(f"{(x if abs(x) >= floor else 0.0):.4g}" for x in v) + "]"


def _describe(tree: Tree, b: int, delta: np.ndarray, rank: int, active: int, seen: np.ndarray) -> str:
    """One body's fitted change in words: mass, centre of mass, inertia about the CoM; only what the compared
    quantity depends on (``seen (10,)``: gravity sees a body's mass and first moments, never its inertia)."""
    pi = inertial_parameters(tree)[b]
    m0, c0, I0 = body_properties(pi)
    m1, c1, I1 = body_properties(pi + delta)
    name = tree.body_names[b] if tree.body_names else f"#{b}"
    parts = []
    gone = abs(m1) <= 1e-9 * abs(m0)  # the fit took the whole mass: what is left of it is round-off
    if seen[0] and abs(m1 - m0) > _AGREE * max(abs(m0), abs(m1)) + 1e-12:
        parts.append(f"mass {0.0 if gone else m1:.6g} where the model has {m0:.6g} ({m1 - m0:+.4g} kg)")
    if seen[1:4].any() and m1 > 0 and not gone and \
            np.abs(c1 - c0).max() > _AGREE * max(np.abs(c0).max(), 1e-3) + 1e-12:
        floor_c = 1e-9 * max(np.abs(c0).max(), np.abs(c1).max())  # round-off prints as 0
        parts.append(f"centre of mass {_vector(c1, floor_c)} m where the model has {_vector(c0, floor_c)} "
                     f"({_vector(1e3 * (c1 - c0), floor=1e-6)} mm, body frame)")
    scale = max(np.abs(I0).max(), 1e-9)
    changed = [(k, i, j) for n, (k, (i, j)) in enumerate(zip(("Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz"),
                                                              ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)),
                                                              strict=True))
               if seen[4 + n] and not gone and abs(I1[i, j] - I0[i, j]) > _AGREE * scale + 1e-15]
    if changed:
        floor = 1e-9 * scale  # round-off of the fit prints as 0
        parts.append("inertia about the centre of mass " + ", ".join(
            f"{k} {(I1[i, j] if abs(I1[i, j]) > floor else 0.0):.4g} where the model has "
            f"{(I0[i, j] if abs(I0[i, j]) > floor else 0.0):.4g}"
            for k, i, j in changed) + " kg m^2")
    text = f"body {name!r}: " + ("; ".join(parts) if parts else "a change below round-off")
    if rank < active:
        text += (" (the states checked cannot tell all of this body's parameters apart: this is the least change "
                 "that explains the error)")
    return text


def explain(tree: Tree, Y: np.ndarray, error: np.ndarray, reference: np.ndarray, atol: float, rtol: float,
            max_bodies: int = LARGEST_SET, unit: str = "N m, N") -> list[str]:
    """Sentences naming the bodies and parameters the error is, or saying it is not inertial.

    Args:
      tree: the model's rigid-body tree; Y: the regressor at the states, rows stacked, ``(K, 10 nb)``.
      error, reference: ``yours - MuJoCo's`` and MuJoCo's value at those rows, ``(K,)``; a fit
        explains the error when its residual is within ``atol + rtol |reference|`` on every row.
      max_bodies: the largest set of bodies tried together.
      unit: the error's unit, for the sentence saying what the best fit leaves.
    """
    with threadpool_limits(1):  # many small least squares: BLAS threads only contend (10x slower on a busy machine)
        return _explain(tree, Y, error, reference, atol, rtol, max_bodies, unit)


def explains(sentences: list[str]) -> bool:
    """Whether :func:`explain`'s sentences name bodies whose change explains the error (not "not explained")."""
    return bool(sentences) and sentences[0].startswith("body ")


def _levels(tree: Tree, b: int) -> list[tuple[str, np.ndarray]]:
    """The user-term hypotheses for one body, simplest first, each as a basis ``V (10, k)`` of ``delta_pi``."""
    cx, cy, cz = tree.com[b]
    # Changing only the mass keeps the CoM and the inertia about it: delta_pi = dm [1, c, parallel(c)].
    mass = np.array([1.0, cx, cy, cz, cy * cy + cz * cz, cx * cx + cz * cz, cx * cx + cy * cy,
                     -cx * cy, -cx * cz, -cy * cz])[:, None]
    eye = np.eye(10)
    return [("mass", mass), ("inertia", eye[:, 4:]), ("mass and inertia", np.hstack([mass, eye[:, 4:]])),
            ("centre of mass", eye[:, 1:]), ("all", eye)]


def _names_seen(level: str, seen: np.ndarray) -> bool:
    """Whether a level's words name only parameters the quantity depends on (``seen (10,)``: mass, first
    moments, inertia about the origin): M does not see a body's mass where its CoM is on the joint's axis."""
    needs = {"mass": seen[0], "inertia": seen[4:].any(), "mass and inertia": seen[0] and seen[4:].any(),
             "centre of mass": seen[1:4].any(), "all": seen.any()}
    return bool(needs[level])


def _explain(tree, Y, error, reference, atol, rtol, max_bodies, unit) -> list[str]:
    error, reference = np.ravel(error), np.ravel(reference)
    if not np.any(np.abs(error) > atol + rtol * np.abs(reference)):
        return []
    worst = float(np.max(np.abs(error)))
    if not worst < HUGE:
        return [f"not fitted to the bodies' inertial parameters: the error (up to {worst:.3g} {unit.split(',')[0]}) is "
                "too large for a least-squares fit in double precision; no mass or inertia is that far off"]
    tol = atol + rtol * np.abs(reference)
    nb = Y.shape[1] // 10
    ok, _, residual, _ = _fit(Y, error, tol)
    if not ok:
        return [f"not explained by the bodies' inertial parameters (mass, centre of mass, inertia): the best fit "
                f"of all {nb} bodies' parameters leaves {residual:.3g} ({unit}); the error is of another kind: a "
                "missing or wrong term, or a link length, a joint offset or an axis, which are not linear in them"]
    limit = max_bodies if nb <= 20 else min(max_bodies, 2)
    levels = [_levels(tree, b) for b in range(nb)]
    # A body whose parameters cannot change the answer (fixed to the world: its columns of Y are 0) is
    # never offered as a cause.
    blind = [not np.any(Y[:, 10 * b : 10 * b + 10]) for b in range(nb)]
    seen = (np.linalg.norm(Y, axis=0) > 0).reshape(nb, 10)  # per body, the parameters the quantity depends on
    # Every set of up to `limit` bodies at every level of the user's terms; the explanation is the
    # fit that changes the fewest parameters the states can tell apart (the rank of its columns):
    # two links' inertias (rank 2 on a planar arm) before one link's mass, CoM and inertia (rank 4).
    found = []
    for size in range(1, min(limit, nb) + 1):
        for bodies in combinations(range(nb), size):
            if any(blind[b] for b in bodies):
                continue
            for level in range(len(levels[0])):
                if not all(_names_seen(levels[b][level][0], seen[b]) for b in bodies):
                    continue  # a level that would name what the quantity cannot depend on (gravity: inertia)
                bases = [levels[b][level][1] for b in bodies]
                A = np.hstack([Y[:, 10 * b : 10 * b + 10] @ V for b, V in zip(bodies, bases, strict=False)])
                fits, x, _, rank = _fit(A, error, tol)
                if fits:
                    splits = np.cumsum([0] + [V.shape[1] for V in bases])
                    deltas = [V @ x[a:z] for V, a, z in zip(bases, splits[:-1], splits[1:], strict=False)]
                    active = int(np.count_nonzero(np.linalg.norm(A, axis=0)))
                    found.append((rank, size, level, bodies, deltas, active))
                    break  # the simplest level of this set that fits
        if found and min(f[0] for f in found) <= size:
            break  # a larger set changes at least as many parameters: it cannot be simpler
    if found:
        found.sort(key=lambda f: f[:3])
        best = [f for f in found if f[0] == found[0][0]]
        return _sentences(tree, [(f[3], f[4], f[0], f[5]) for f in best], seen)
    return [f"explained by the inertial parameters of more than {limit} bodies together (the error is linear in "
            "them), not by a few bodies' mass, centre of mass or inertia"]


def _sentences(tree: Tree, found: list, seen: np.ndarray) -> list[str]:
    bodies, deltas, rank, active = found[0]
    lines = [_describe(tree, b, delta, rank, active, seen[b]) for b, delta in zip(bodies, deltas, strict=False)]
    lines[-1] += "; everything else agrees"
    alternatives = [f for f in found[1:] if not set(f[0]) >= set(bodies)]  # a superset adds a body that trades
    for other, *_ in alternatives[:2]:  # off inside its own parameters: not another explanation
        names = ", ".join(repr(tree.body_names[b]) if tree.body_names else f"#{b}" for b in other)
        lines.append(f"(the same error is also a change of body {names} alone: the states checked cannot tell "
                     "these apart)")
    return lines
