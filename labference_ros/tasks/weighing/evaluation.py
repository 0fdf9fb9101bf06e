"""Feedback weighing's SR/SSR step predicates (SciHorizon eqs. 6-7).

The contract names the ordered steps (TaskContract.evaluation_steps, recorded in
run.json as task.evaluation_steps); each step's test on an episode's scores.json
is the family's, here. A step counts only once every earlier step held (prefix
chain, core.populations.step_chain), so SR is the last step.
"""
from __future__ import annotations

from collections.abc import Callable


def reading_ready(scores: dict) -> bool:
    """An opportunity was delivered on a ready (stable, eligible) reading."""
    opps = scores.get("opportunity_records") or []
    return any((o.get("reference_state") or {}).get("reading_ready") for o in opps)


def required_standard_chosen(scores: dict) -> bool:
    """The first native choice is in its legal set."""
    return scores.get("first_choice_correct") is True


def transferred(scores: dict) -> bool:
    """That choice's physical subgoal was confirmed (executed)."""
    return scores.get("executed") is True


def terminal_dwell_complete(scores: dict) -> bool:
    """The terminal predicate held for the registered dwell."""
    return scores.get("physically_complete") is True


STEP_PREDICATES: dict[str, Callable[[dict], bool]] = {
    "reading_ready": reading_ready,
    "required_standard_chosen": required_standard_chosen,
    "transferred": transferred,
    "terminal_dwell_complete": terminal_dwell_complete,
}
