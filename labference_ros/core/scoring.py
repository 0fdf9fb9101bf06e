"""Episode scores at three levels (paper 5.4, 7.1-7.2) from the referee's records.

Choice: first identified choice at each opportunity against its legal set.
Execution: the chosen object's physical subgoal confirmed (released, supported
where the operation puts it, stable reading).
Task: physical completion (terminal predicate held for the registered dwell),
valid completion (no irreversible violation), clean vs recovered completion.
"""
from __future__ import annotations

from .metrics import choice_rates, rate

# Event categories that are recoverable errors or operation failures (7.2).
ERROR_CATEGORIES = ("execution_failure", "premature_advancement", "unnecessary_repetition",
                    "incorrect_choice", "regression", "early_termination", "premature_interaction")
EXPLICIT_CATEGORIES = ("premature_advancement", "unnecessary_repetition", "early_termination", "recovery")
# Categories only a condition that declares them counts (an external event's premature
# interactions): listed in `categories` where the referee counts them, so the records of
# the conditions without them keep their form.
DECLARED_CATEGORIES = ("premature_interaction",)


def episode_scores(*, episode_id: str, t: float | None, contract_identity: dict, state, opportunities,
                   counts: dict, violations: list, errors_outstanding: int, finished: str | None) -> dict:
    native = [o for o in opportunities if o.native_scorable]
    closed_or_chosen = [o for o in native if o.status == "closed" or o.first_choice is not None]
    native_rates = choice_rates((o.first_choice, o.legal_set) for o in closed_or_chosen)
    explicit_rates, agree, both = _track(opportunities, {o.id: o.first_report for o in opportunities
                                                         if o.first_report is not None},
                                         lambda op: op.physical)

    first = native[0] if native else None
    first_correct = first.choice_correct if first is not None else None
    # Execution is measured for the first choice whatever its correctness: a wrong
    # standard carried onto the pan is a wrong choice, physically executed.
    executed = None
    if first is not None and first.first_choice is not None:
        executed = {"confirmed": True, "failed": False}.get(first.execution or "", None)
    exec_confirmed = counts.get("execution_confirmed", 0)
    exec_failed = counts.get("execution_failure", 0)

    physical = bool(state.physically_complete)
    valid = physical and not violations
    errors = sum(counts.get(c, 0) for c in ERROR_CATEGORIES)
    all_correct = bool(native) and all(o.choice_correct is True for o in native)
    clean = valid and all_correct and errors == 0
    recovered = valid and not clean and errors > 0 and errors_outstanding == 0
    if not physical:
        completion_class = "none"
    elif not valid:
        completion_class = "invalid"
    elif clean:
        completion_class = "clean"
    elif recovered:
        completion_class = "recovered"
    else:
        completion_class = "incomplete_choice_coverage"

    def undecided(value: bool):
        # Before the episode ends, "not complete yet" is unknown rather than a failure.
        return value if (physical or finished) else None

    return {
        "episode_id": episode_id,
        "t": t,
        "contract": contract_identity,
        "evidence_version": state.evidence_version,
        "finished": finished,
        "opportunities": len(opportunities),
        "native": {**native_rates, "open": len(native) - len(closed_or_chosen)},
        "explicit": {**explicit_rates, "agreement": rate(agree, both), "agreement_n": both},
        "identified_choices": native_rates["identified"],
        "correct_choices": native_rates["correct"],
        "first_choice_correct": first_correct,
        "executed": executed,
        "execution": {"confirmed": exec_confirmed, "failed": exec_failed,
                      "rate": rate(exec_confirmed, exec_confirmed + exec_failed)},
        "physically_complete": undecided(physical),
        "valid_complete": undecided(valid),
        "clean_complete": undecided(clean),
        "recovered_complete": undecided(recovered),
        "completion_class": completion_class,
        "complete_t": state.complete_t,
        "terminal_dwell_s": round(state.terminal_dwell_s, 6),
        "violations": list(violations),
        "errors": errors,
        "errors_outstanding": errors_outstanding,
        "categories": {c: counts.get(c, 0) for c in sorted(set(ERROR_CATEGORIES) | set(EXPLICIT_CATEGORIES))
                       if c not in DECLARED_CATEGORIES or c in counts},
        "obligations": {k: v["status"] for k, v in sorted(getattr(state, "obligations", {}).items())},
        # Weighing's standards on the pan; a family without standards has none.
        "supported_standards": sorted(getattr(state, "supported_standards", ())),
    }


def tri(value: bool | None) -> int:
    """int8 convention of ScoreSnapshot.msg: -1 unknown, 0 no, 1 yes."""
    return -1 if value is None else int(bool(value))


def _track(opportunities, firsts: dict, comparable=lambda op: True) -> tuple[dict, int, int]:
    """A reporting track (explicit reports, symbolic commitments): firsts maps opportunity
    id -> the first operation on the track there. Its population is the opportunities
    closed or answered on it (empty for a system that never uses the track); the rates of
    eqs. 4-5 over it; and (agreeing, compared): how often it names the native first choice
    where both exist and the operation is comparable with a physical choice."""
    population = [o for o in opportunities if firsts and (o.status == "closed" or o.id in firsts)]
    rates = choice_rates((firsts.get(o.id), o.legal_set) for o in population)
    both = [o for o in opportunities if o.id in firsts and o.first_choice is not None and comparable(firsts[o.id])]
    return rates, sum(1 for o in both if firsts[o.id] == o.first_choice), len(both)


def commitment_track(opportunities, commitments: dict) -> dict:
    """The symbolic-commitment track, scored apart from native choices and explicit
    reports, over the opportunities given (a family passes those its commitments are
    about): commitments maps opportunity id -> (first committed operation, its time)."""
    rates, agree, both = _track(opportunities, {k: op for k, (op, _t) in commitments.items()})
    return {**rates, "agreement": rate(agree, both), "agreement_n": both, "agreeing": agree}
