"""Shared test helpers (imported as ``from support import ...``)."""

from __future__ import annotations

import numpy as np


def assert_close(actual, expected, *, atol: float, rtol: float = 0.0, what: str = "arrays") -> None:
    """Assert ``|actual - expected| <= atol + rtol |expected|`` entry-wise.

    On failure the message shows the worst entry's index, both values, the
    error and its bound, then both arrays (NumPy's summary for big ones).
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    if np.iscomplexobj(actual) or np.iscomplexobj(expected):  # compare (real, imag) pairs
        actual, expected = (np.stack([a.real, a.imag], axis=-1) for a in (actual + 0j, expected + 0j))
    actual, expected = actual.astype(float), expected.astype(float)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != expected {expected.shape}"
    err = np.abs(actual - expected)
    bound = atol + rtol * np.abs(expected)
    bad = ~(err <= bound)  # NaN counts as bad
    if bad.any():
        excess = np.where(np.isnan(err), np.inf, err - bound)
        worst = np.unravel_index(int(np.argmax(excess)), err.shape)
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {err.size} entries out of tolerance; worst at {worst}: "
            f"actual {actual[worst]!r}, expected {expected[worst]!r}, |error| {err[worst]:.3e} > "
            f"bound {bound[worst]:.3e} (atol {atol:g}, rtol {rtol:g})\n"
            f"actual:\n{actual}\nexpected:\n{expected}"
        )
