"""Protocol conformance: every registered task family's referee scores failed
attempts, recoveries and imperfect behaviour as the paper says (4.1, 5.3, 5.4,
7.2). The expectations are here, once; each family declares only its streams
(test/tasks/<family>/protocol_streams.py: which object, which destination, what
"seated" or "on the pan" looks like in its measurements). A family registered
in labference_ros.tasks without such a module fails here until it declares one.

Each stream builder returns the referee after its stream (opened_while_held:
the referee and the id of the opportunity that opened while the object was held).
"""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

from labference_ros import tasks
from labference_ros.core.protocol import DROP, FAILURE_KINDS, SLIP

TEST_ROOT = pathlib.Path(__file__).resolve().parent.parent
FAMILIES = tasks.available()


def streams(name: str):
    """The family's stream module, found beside its own tests (test/tasks/<package>/)."""
    package = tasks._modules()[name].rsplit(".", 1)[-1]
    path = TEST_ROOT / "tasks" / package / "protocol_streams.py"
    if not path.exists():
        pytest.fail(f"task family {name!r} declares no protocol streams: add {path.relative_to(TEST_ROOT.parent)}")
    spec = importlib.util.spec_from_file_location(f"protocol_streams_{package}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def events(referee, category: str) -> list[dict]:
    return [e for e in referee.events if e["category"] == category]


def failure_kinds(referee) -> list[str]:
    """The kind of each execution failure (core.protocol.FAILURE_KINDS)."""
    return [e["detail"].get("failure") for e in events(referee, "execution_failure")]


def first_chosen(scores: dict) -> dict:
    return next(o for o in scores["opportunity_records"] if o["first_choice"] is not None)


@pytest.fixture(params=FAMILIES)
def family(request):
    return streams(request.param)


def test_a_drop_after_a_correct_choice_keeps_choice_credit_and_is_an_execution_failure(family):
    """5.3: "A correct target followed by a dropped object receives choice credit and
    an execution failure." 7.2: the retry that completes makes it a recovered completion."""
    referee = family.drop_after_correct_choice()
    s = referee.scores()
    assert s["first_choice_correct"] is True
    assert s["executed"] is False and first_chosen(s)["execution"] == "failed"
    assert failure_kinds(referee)[0] == DROP
    assert s["physically_complete"] is True
    assert s["completion_class"] == "recovered" and s["errors_outstanding"] == 0
    assert s["categories"]["recovery"] >= 1


def test_a_regrasp_before_the_object_came_to_rest_is_an_adjustment_not_a_failure(family):
    """5.3: a failed attempt needs the object to have come to rest away from its
    destination; caught in the air and completed, the trajectory is clean (7.2)."""
    referee = family.regrasp_within_window()
    s = referee.scores()
    assert not events(referee, "execution_failure")
    assert s["executed"] is True and s["first_choice_correct"] is True
    assert s["completion_class"] == "clean"


def test_a_slip_is_an_execution_failure_and_the_state_follows_the_object(family):
    """4.1, 5.3: outcomes determine remaining work; what slipped back is to be done
    again. Completed afterwards: recovered (7.2)."""
    referee = family.slip()
    s = referee.scores()
    assert set(failure_kinds(referee)) & {SLIP, DROP}
    assert s["completion_class"] == "recovered" and s["errors_outstanding"] == 0


def test_advancing_before_the_placement_is_confirmed_is_premature_advancement(family):
    """4.1: "if insertion fails, the robot must complete that placement before
    advancing"; 5.4: premature advancement is an explicit event category."""
    referee = family.premature_advancement()
    s = referee.scores()
    assert s["categories"]["premature_advancement"] >= 1
    assert s["errors"] >= 1 and s["completion_class"] != "clean"


def test_a_wrong_first_approach_corrected_and_completed_is_a_recovered_completion(family):
    """7.2: "Recovered completion requires a documented recoverable error or operation
    failure, its resolution, and valid task completion"; the earlier incorrect choice
    stays in its own record."""
    referee = family.wrong_then_corrected()
    s = referee.scores()
    assert s["categories"]["incorrect_choice"] == 1
    assert [o["choice_correct"] for o in s["opportunity_records"]].count(False) == 1
    assert s["physically_complete"] is True and s["valid_complete"] is True
    assert s["completion_class"] == "recovered"
    assert s["errors_outstanding"] == 0 and s["categories"]["recovery"] >= 1


def test_a_release_outside_the_destination_is_an_execution_failure(family):
    """5.3, 8.1: release without the placement predicate is no confirmed execution;
    the obligation stays open and nothing completes."""
    referee = family.release_outside_region()
    s = referee.scores()
    failures = events(referee, "execution_failure")
    assert failures and s["categories"]["execution_failure"] == len(failures)
    assert all(k in FAILURE_KINDS for k in failure_kinds(referee))
    carried_out = referee.book.get(failures[-1]["opportunity_id"])
    assert carried_out.choice_correct is True and carried_out.execution == "failed"
    assert s["physically_complete"] in (None, False) and s["completion_class"] == "none"
    assert s["errors_outstanding"] >= 1


def test_an_observation_after_the_episode_end_opens_nothing_and_changes_no_score(family):
    """5.2, docs/records.md: evidence delivered after the end is recorded as late and
    never scored."""
    referee = family.completed()
    assert referee.finished == "completed"
    before = referee.scores()
    receipt = referee.deliver_observation("after-the-end", before["t"] + 1.0)[0]
    assert receipt["status"] == "late" and receipt["opportunity_id"] == -1 and not receipt["opened"]
    after = referee.scores()
    assert after == before
    assert before["completion_class"] == "clean"


def test_an_opportunity_opened_while_the_correct_object_is_held_credits_its_move_once(family):
    """5.3: the first identifiable choice at an opportunity is frozen; one that opens
    while the object is already in the hand takes its choice from where that object
    goes, credited once."""
    referee, opportunity_id = family.opened_while_held()
    opp = referee.book.get(opportunity_id)
    assert opp is not None and opp.first_choice is not None
    assert opp.choice_correct is True
    scored = [e for e in events(referee, "choice") if e["opportunity_id"] == opportunity_id
              and e["detail"].get("scored")]
    assert len(scored) == 1
