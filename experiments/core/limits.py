"""Every limit crossdyn puts on what it is asked to do, one value per meaning, each with its reason."""

from __future__ import annotations

__all__ = ["DURATION_MAX"]

# Simulated seconds of one run: a day of the robot's life; a typo (1e9) is refused before the table is allocated.
DURATION_MAX = 86_400.0
