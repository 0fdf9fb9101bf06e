"""The one episode loop (core.episode_loop): the protocol decisions the policy
bridge and the Oracle's continuations share, on hand-made observations."""
from __future__ import annotations

import numpy as np
import pytest

from labference_ros.core.action_conversion import identity
from labference_ros.core.action_spec import reference_joint_spec
from labference_ros.core.episode_loop import UNSTATED, EpisodeLoop
from labference_ros.core.observation import ARM_JOINTS, FINGER_JOINTS

HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


class Instance:
    def public_instruction(self) -> str:
        return "bring the reading to 160 g"


class System:
    """A tested system stand-in: returns what it is told to, reports what it is told to."""

    name = "stand_in"

    def __init__(self):
        self.finished = False
        self.pending_reports: list[dict] = []

    def drain_reports(self):
        out, self.pending_reports = self.pending_reports, []
        return out


def make_loop(system=None, **kw):
    records = []
    spec = reference_joint_spec(50.0, 50)
    loop = EpisodeLoop(system or System(), identity(spec), episode_id="ep", instance=Instance(),
                       record=records.append, **kw)
    return loop, records


def observe(loop, t, q=HOME, width=0.08):
    joints = {**dict(zip(ARM_JOINTS, q)), **{f: width / 2 for f in FINGER_JOINTS}}
    image = np.zeros((4, 4, 3), np.uint8)
    images = {c: image for c in ("front", "wrist", "display")}
    return loop.observe(t, images, {c: t for c in images}, joints, {})


def rows(n, q=HOME, width=0.08):
    return np.tile(np.concatenate([q, [width]]), (n, 1))


def test_observations_are_numbered_and_carry_the_systems_own_history():
    loop, records = make_loop()
    first = observe(loop, 0.0)
    assert first.observation_id == "ep:obs00001" and first.history == ()
    loop.take_chunk(rows(2), 0.0)
    second = observe(loop, 0.04)
    assert second.observation_id == "ep:obs00002"
    assert [h["observation_id"] for h in second.history] == ["ep:obs00001"]
    assert second.history[0]["chunk_status"] == "accepted" and second.history[0]["rows"] == 2
    assert [r["record"] for r in records] == ["receipt", "chunk", "receipt"]


def test_newer_evidence_drops_the_queued_rows():
    loop, records = make_loop()
    observe(loop, 0.0)
    loop.acknowledged(1)
    loop.note_evidence(1, "ep:obs00001")
    loop.take_chunk(rows(5), 0.0)
    assert loop.next_command(0.0).row is not None
    loop.note_evidence(2, "another delivery")  # a confirmed change the referee announced
    assert loop.next_command(0.02) is None  # observe again, do not finish the old plan
    dropped = records[-1]
    assert dropped["record"] == "invalidated" and dropped["rows_dropped"] == 4 and dropped["latest"] == 2
    # The system is told its chunk did not run to its end (its plan goes on from the rows that ran).
    after = observe(loop, 0.02)
    assert after.history[-1]["rows_dropped"] == 4
    assert after.last_chunk_ran and not after.last_chunk_ran_to_end
    assert after.last_chunk_rows_run == 1  # and which row it holds: the one sent, the setpoint
    assert np.array_equal(after.joint_setpoint, HOME)


def test_a_chunk_whose_rows_were_all_sent_ran_to_its_end():
    loop, _ = make_loop()
    first = observe(loop, 0.0)
    assert not first.last_chunk_ran_to_end and first.last_chunk_rows_run is None  # no chunk yet
    loop.take_chunk(rows(3), 0.0)
    sent = [loop.next_command(0.02 * k) for k in range(4)]
    assert [c is None for c in sent] == [False, False, False, True]
    assert observe(loop, 0.06).last_chunk_ran_to_end
    loop.take_chunk(rows(3), 0.06)
    loop.next_command(0.06)
    loop.pause(0.08, "operator")  # two rows never sent
    paused = observe(loop, 1.0)
    assert paused.history[-1]["rows_dropped"] == 2 and not paused.last_chunk_ran_to_end
    assert paused.last_chunk_rows_run == 1
    assert "rows_dropped" not in paused.history[-2]  # what an earlier observation was told stays


def test_a_late_echo_of_the_answered_delivery_keeps_its_rows():
    # Without the echo wait the referee's receipt may arrive after the answer: it
    # announces the evidence that delivery carried, which the rows already answer.
    loop, records = make_loop()
    observe(loop, 0.0)
    loop.take_chunk(rows(3), 0.0)
    loop.note_evidence(1, "ep:obs00001")
    assert loop.next_command(0.0).row is not None
    assert "invalidated" not in [r["record"] for r in records]


def test_a_chunk_answering_stale_evidence_is_refused_and_a_fresh_observation_follows():
    loop, records = make_loop()
    observe(loop, 0.0)  # obs carries version 0
    loop.note_evidence(3, "someone else's delivery")
    verdict = loop.take_chunk(rows(3), 0.0)
    assert not verdict.accepted and verdict.status == "stale"
    assert loop.next_command(0.0) is None  # nothing of it runs: observe again now
    assert "invalidated" not in [r["record"] for r in records]  # no row was ever queued
    assert observe(loop, 0.0).evidence_version == 3


def test_a_refused_chunk_on_current_evidence_holds_one_interval():
    loop, _ = make_loop()
    observe(loop, 0.0)
    verdict = loop.take_chunk(np.full((2, 8), np.nan), 0.0)
    assert not verdict.accepted
    command = loop.next_command(0.0)
    assert command is not None and command.row is None and command.gripper is None
    assert loop.next_command(0.02) is None
    assert observe(loop, 0.02).last_chunk_rows_run == 0


def test_chunks_are_checked_against_the_state_they_were_computed_from():
    # An incremental (delta) system's rows are added to the observed state, not to zero.
    from labference_ros.core.action_conversion import ActionConversion, native_spec

    spec = reference_joint_spec(50.0, 50)
    conversion = ActionConversion(native_spec(spec, "delta", "target_width_m"), spec, arm="delta")
    loop = EpisodeLoop(System(), conversion, episode_id="ep", instance=Instance())
    observe(loop, 0.0)
    deltas = np.zeros((2, 8))
    deltas[:, 7] = 0.0
    verdict = loop.take_chunk(deltas, 0.0)
    assert verdict.accepted, verdict.reasons
    np.testing.assert_allclose(verdict.applied[0, :7], HOME)


def test_the_gripper_is_commanded_only_when_its_target_changes():
    loop, _ = make_loop()
    observe(loop, 0.0)
    chunk = rows(3)
    chunk[2, 7] = 0.02
    loop.take_chunk(chunk, 0.0)
    assert [loop.next_command(t).gripper for t in (0.0, 0.02, 0.04)] == [pytest.approx(0.08), None,
                                                                         pytest.approx(0.02)]


def test_reports_are_bound_to_the_answered_delivery_not_to_an_opportunity():
    system = System()
    loop, records = make_loop(system)
    observe(loop, 1.0)
    loop.acknowledged(2)
    system.pending_reports = [{"operation": {"type": "add", "object": "std_10", "destination": "pan"}}]
    (report,) = loop.reports(1.0, "stand_in")
    assert report.opportunity_id == UNSTATED and report.evidence_version == 2
    assert report.operation == {"type": "add", "object": "std_10", "destination": "pan"}
    assert loop.reports(1.0, "stand_in") == []
    sent = records[-1]
    assert sent["record"] == "report_sent" and sent["sent_evidence_version"] == 2
    assert sent["sent_opportunity_id"] == UNSTATED


def test_a_report_without_an_operation_is_kept_out_of_the_report_track():
    system = System()
    loop, records = make_loop(system)
    observe(loop, 1.0)
    system.pending_reports = [{"kind": "state", "displayed_g": 150.0},
                              {"kind": "operation", "operation": {"type": "", "object": "", "destination": ""}},
                              {"kind": "operation", "operation": {"type": "add", "object": "std_10",
                                                                  "destination": "pan"}}]
    (report,) = loop.reports(1.0, "stand_in")
    assert report.operation["object"] == "std_10"
    assert [r["record"] for r in records[-3:]] == ["report_not_sent", "report_not_sent", "report_sent"]


def test_receipts_and_chunks_carry_the_wall_clock_when_given_one():
    ticks = iter([100.0, 100.5])
    loop, records = make_loop(wall_clock=lambda: next(ticks))
    observe(loop, 0.0)
    loop.take_chunk(rows(1), 0.0)
    assert [(r["record"], r["wall_time"]) for r in records] == [("receipt", 100.0), ("chunk", 100.5)]
    plain, plain_records = make_loop()
    observe(plain, 0.0)
    assert "wall_time" not in plain_records[0]


def test_stop_rules_deadline_and_a_finished_system_held():
    system = System()
    loop, _ = make_loop(system, stop_hold_s=4.0, deadline_s=30.0)
    assert loop.stop_reason(1.0) is None
    system.finished = True
    assert loop.stop_reason(2.0) is None  # the hold starts here
    assert loop.stop_reason(5.98) is None
    assert loop.stop_reason(6.0) == "policy_stop"
    assert make_loop(deadline_s=30.0)[0].stop_reason(30.0) == "deadline"
    assert make_loop()[0].stop_reason(1e6) is None  # no deadline of its own
