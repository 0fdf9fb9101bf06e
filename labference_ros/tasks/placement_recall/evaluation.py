"""Placement recall's SR/SSR step predicates (SciHorizon eqs. 6-7) on scores.json."""
from __future__ import annotations

from collections.abc import Callable


def placed(scores: dict) -> bool:
    """The target was confirmed seated in a hole (the retrieval reference exists)."""
    return bool((scores.get("placement") or {}).get("placed_hole"))


def slot_recalled(scores: dict) -> bool:
    """The first deliberate retrieval approach went to the hole the target was placed in."""
    return (scores.get("retrieval") or {}).get("correct") is True


def retrieved(scores: dict) -> bool:
    """The target was taken out of its hole."""
    return (scores.get("retrieval") or {}).get("retrieved") is True


def delivered(scores: dict) -> bool:
    """The target stood in the marked region for the terminal window, distractors kept."""
    return scores.get("physically_complete") is True


STEP_PREDICATES: dict[str, Callable[[dict], bool]] = {
    "placed": placed,
    "slot_recalled": slot_recalled,
    "retrieved": retrieved,
    "delivered": delivered,
}
EVALUATION_STEPS = tuple(STEP_PREDICATES)
