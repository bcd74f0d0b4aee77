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


def doc_section(page: str, title: str) -> str:
    """The text of a section of a Markdown page of the repository, under its heading.

    Args:
      page: the page's path from the repository root (``docs/guides/pytest.md``).
      title: the heading's text, or its beginning (any level).

    Returns:
      The section's text up to the next heading of the same or a higher level
      (fenced code is skipped when looking for headings).

    Raises:
      AssertionError: the page has no such heading (the docs moved: the test says where it looked).
    """
    import re
    from pathlib import Path

    lines = (Path(__file__).resolve().parents[1] / page).read_text().splitlines()
    fenced, start, level = False, None, 0
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            continue
        heading = None if fenced else re.match(r"(#+) (.*)", line)
        if heading is None:
            continue
        if start is None and heading.group(2).startswith(title):
            start, level = i + 1, len(heading.group(1))
        elif start is not None and len(heading.group(1)) <= level:
            return "\n".join(lines[start:i]) + "\n"
    assert start is not None, f"{page} has no heading starting {title!r}"
    return "\n".join(lines[start:]) + "\n"


def code_blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of one language in Markdown ``text``, in order (``""``: unlabelled blocks)."""
    blocks: list[str] = []
    current: list[str] | None = None
    label = ""
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if current is None and stripped.startswith("```"):
            current, label = [], stripped[3:].strip()
        elif current is not None and stripped == "```":
            if label == language:
                blocks.append("".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks
