"""Placement recall's SR/SSR step predicates (SciHorizon eqs. 6-7) on scores.json."""
from __future__ import annotations

from collections import Counter
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


def _counts(values) -> str:
    counts = Counter(v for v in values if v)
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "none"


def report_lines(scores: list[dict]) -> dict[str, str]:
    """What the report says about placement and retrieval over a cell's episodes: the holes
    actually chosen, how often the placement settled elsewhere than intended, the fraction
    of episodes reaching the retrieval opportunity, and where the retrievals went."""
    n = len(scores)
    placements = [s.get("placement") or {} for s in scores]
    retrievals = [s.get("retrieval") or {} for s in scores]
    placed = [p for p in placements if p.get("placed_hole")]
    reached = [r for r in retrievals if r.get("reached")]
    chosen = [r for r in reached if r.get("chosen_hole")]
    correct = sum(1 for r in chosen if r.get("correct") is True)
    old_position = sum(1 for r in chosen if r.get("chosen_hole") == r.get("old_world_position_hole")
                       and r.get("chosen_hole") != r.get("reference_hole"))
    share = f"{100.0 * correct / len(chosen):.1f}%" if chosen else "n/a"
    elsewhere = sum(1 for p in placed if p.get("deviation"))
    entries = [p["guide_entry"] for p in placements if p.get("guide_entry")]
    within = sum(1 for e in entries if e.get("within_tolerance"))
    tracks = [s.get("commitment") or {} for s in scores]
    committed = sum(c.get("identified") or 0 for c in tracks)
    right = sum(c.get("correct") or 0 for c in tracks)
    agreeing = sum(c.get("agreeing") or 0 for c in tracks)
    compared = sum(c.get("agreement_n") or 0 for c in tracks)
    return {
        "commitment": f"symbolic commitments {committed} in {sum(1 for c in tracks if c.get('identified'))}/{n} "
                      f"episodes, correct {right}/{committed}; agreeing with where the hand went {agreeing}/{compared}",
        "placement": f"placed {len(placed)}/{n}, settled elsewhere than intended {elsewhere}/{len(placed)}; "
                     f"holes {_counts(p.get('placed_hole') for p in placed)}; "
                     f"entered the guides within the handoff tolerance {within}/{len(entries)}",
        "retrieval": f"reached {len(reached)}/{n}, chosen {len(chosen)}/{len(reached)}, correct {correct}/{len(chosen)}"
                     f" ({share} of chosen); holes {_counts(r.get('chosen_hole') for r in chosen)}; "
                     f"wrong at the placed hole's old world position {old_position}",
    }
