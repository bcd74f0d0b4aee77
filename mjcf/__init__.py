"""MJCF models: the single source of physical parameters for crossdyn.

Each ``NAME.xml`` here is a built-in model that ``experiments.core.models.load_model``
resolves by name.  ``common.xml`` holds the shared visual settings and materials
and is included by every model.
"""

from pathlib import Path

DIRECTORY = Path(__file__).resolve().parent


def path(name: str) -> Path:
    """Path of the built-in model ``NAME.xml`` (which may not exist)."""
    return DIRECTORY / f"{name}.xml"


def names() -> list[str]:
    """Built-in model names, sorted (shared include files excluded)."""
    return sorted(p.stem for p in DIRECTORY.glob("*.xml") if p.stem != "common")
