"""Object identities of the weighing family: the labelled standards with their
nominal masses, and the unlabelled sample whose mass is hidden evaluator data."""
from __future__ import annotations

STANDARD_MASSES_G: dict[str, int] = {"std_10": 10, "std_20": 20, "std_50": 50, "std_100": 100}
STANDARDS: tuple[str, ...] = tuple(STANDARD_MASSES_G)
SAMPLE = "sample"
