"""Centrifuge loading's SR/SSR step predicates (SciHorizon eqs. 6-7) on scores.json."""
from __future__ import annotations

from collections.abc import Callable


def opposite_slot_chosen(scores: dict) -> bool:
    """The first native choice (an insertion destination) is in its legal set."""
    return scores.get("first_choice_correct") is True


def inserted(scores: dict) -> bool:
    """That choice's tube was seated in the chosen slot (executed)."""
    return scores.get("executed") is True


def terminal_dwell_complete(scores: dict) -> bool:
    """Both tubes held in opposite slots for the terminal window."""
    return scores.get("physically_complete") is True


STEP_PREDICATES: dict[str, Callable[[dict], bool]] = {
    "opposite_slot_chosen": opposite_slot_chosen,
    "inserted": inserted,
    "terminal_dwell_complete": terminal_dwell_complete,
}
EVALUATION_STEPS = tuple(STEP_PREDICATES)
