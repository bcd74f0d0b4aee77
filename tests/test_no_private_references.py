"""What users read names only what users have.

crossdyn's derivations were first written against notes and documents its users
never get; the package, its models, README and the docs explain the math in their
own words.  This test keeps references to that private material (a "SPEC"
section, the "../shared" folder, numbered source documents) from creeping back.
Tests may name them (this file does), so tests/ is not searched.

It also keeps pages standing alone: a page says what an equation or scheme is in
its own words, and cites its source in plain words ("a thesis chapter on the
biped"), never by the numbering of a document the reader does not have ("eq. 2.19",
"figure 2-9", "section 2.2") nor as "the thesis's" or "the lecture's" step.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEARCHED = ["analytic", "controllers", "experiments", "mjcf", "docs", "benchmarks", ".ci", "README.md",
            "pyproject.toml"]
SKIPPED = {"__pycache__", "_build", ".venv", "build", "results"}
PRIVATE = re.compile(r"\bSPEC\b|\.\./shared|[Ss]eed[ _-]?00[0-4]")
# A source's numbering, or a source named as if the reader had it at hand.
NUMBERED = re.compile(r"\b(?:thesis|lecture|article|textbook|chapter)'s\b"
                      r"|\beqs?\.\s?\(?\d|\bequations? \(?\d+\.\d"
                      r"|\bfig(?:ure)?\.? ?\d+-\d+|\bfig\. ?\d|\bsections? \d+\.\d", re.IGNORECASE)


def _files(root: Path = ROOT):
    for name in SEARCHED:
        path = root / name
        if path.is_file():
            yield path
        elif path.is_dir():
            for file in sorted(path.rglob("*")):
                if file.is_file() and not SKIPPED & set(file.relative_to(root).parts):
                    yield file


def _private_references(text: str) -> list[str]:
    return [f"{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if PRIVATE.search(line)]


def _numbered_references(text: str) -> list[str]:
    return [f"{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if NUMBERED.search(line)]


def test_pattern_catches_what_it_is_for():
    # The pattern must match each form it guards against, or the test below passes on nothing.
    for bad in ("see SPEC §1", "in ../shared/SPEC.md", "seed 000", "Seed-004", "seed_002 printed"):
        assert _private_references(bad), bad
    for fine in ("a seeded run", "--seed 0", "SPECIAL", "seed=1000", "the lecture's form"):
        assert not _private_references(fine), fine


def test_numbering_pattern_catches_what_it_is_for():
    # Each form a page used to point into a source with, and each neighbour that is fine.
    for bad in ("vs eq. 2.19 across the stroke", "(eq.2.35)", "Eq. 3.2 and 2.30", "eqs. 2.31-2.36",
                "equation (2.16)", "seed figure 2-9", "Figure 2-9", "fig. 3", "section 2.2.2",
                "the thesis's J_z", "The lecture's step", "the article's scope figure", "the textbook's arm",
                "the chapter's own (2.17)"):
        assert _numbered_references(bad), bad
    for fine in ("the linearized wheeled pendulum", "@dataclass(frozen=True, eq=False)", "equality constraints",
                 "a thesis chapter on the biped", "the lecture prints", "figure 2", "np.radians(0.5)",
                 "section of a robotics lecture", "the robot's pitch"):
        assert not _numbered_references(fine), fine


def _numbered_in_tree(root: Path = ROOT) -> list[str]:
    found = []
    for file in _files(root):
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # an image or other binary: nothing a reader sees as text
            continue
        name = file.relative_to(root).as_posix()
        found += [f"{name}:{hit}" for hit in _numbered_references(text)]
    return found


def test_a_planted_reference_fails_the_scan(tmp_path):
    # The walk over the tree, not only the pattern: planted references in a page and in a module.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Balance\n\nThe gain comes from eq. 2.19.\n", encoding="utf-8")
    (tmp_path / "experiments" / "rigid_box").mkdir(parents=True)
    (tmp_path / "experiments" / "rigid_box" / "free_rotation.py").write_text(
        "# The lecture's step and MuJoCo's Euler step\n# the thesis's J_z\n", encoding="utf-8")
    assert sorted(_numbered_in_tree(tmp_path)) == [
        "docs/page.md:3: The gain comes from eq. 2.19.",
        "experiments/rigid_box/free_rotation.py:1: # The lecture's step and MuJoCo's Euler step",
        "experiments/rigid_box/free_rotation.py:2: # the thesis's J_z"]


def test_pages_cite_sources_without_their_numbering():
    found = _numbered_in_tree()
    assert not found, "\n".join(found)


def test_nothing_users_read_names_private_material():
    found = []
    searched = 0
    for file in _files():
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # an image or other binary: nothing a reader sees as text
            continue
        searched += 1
        found += [f"{file.relative_to(ROOT)}:{hit}" for hit in _private_references(text)]
    assert searched > 100, f"only {searched} files searched: the walk is broken"
    assert not found, "\n".join(found)
