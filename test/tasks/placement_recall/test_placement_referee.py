"""The placement-recall referee on scripted measurement streams (no simulator):
the actual released hole is the retrieval reference, the retrieval choice is the
first deliberate pre-contact descent over a hole (judged in the rack's measured
frame), and completion needs the target in the marked region for 3 s."""
from __future__ import annotations

import math

import numpy as np
import pytest

from labference_ros.core.measurements import LEFT_FINGER, RIGHT_FINGER, TABLE, ObjectMeasurement, WorldMeasurement
from labference_ros.tasks.placement_recall.contract import RACK_OBJECT, TCP_OBJECT, contract_for
from labference_ros.tasks.placement_recall.instances import RELEASE_REGION, TARGET, generate
from labference_ros.tasks.placement_recall.rack import RackPose, hole_positions
from labference_ros.tasks.placement_recall.referee import Referee
from labference_ros.tasks.placement_recall.task_state import retrieve

DT = 0.02
UPRIGHT = (1.0, 0.0, 0.0, 0.0)
LENGTH = 0.080
GRIP = {LEFT_FINGER, RIGHT_FINGER}


def yaw_quat(yaw: float) -> tuple[float, float, float, float]:
    return (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))


class Stream:
    """A scripted episode: the scene's state, stepped in DT, fed to a referee."""

    def __init__(self, instance, condition="basic", caps="same"):
        self.contract = contract_for(condition, caps)
        self.instance = instance
        self.referee = Referee(self.contract, instance, episode_id="ep")
        self.t = 0.0
        self.pose = instance.rack_pose
        self.target = np.array([*instance.target_start, LENGTH / 2])  # body centre
        self.target_contacts = {TABLE}
        self.tcp = np.array([0.3, 0.0, 0.4])
        self.closing = False
        self.records: list[dict] = []
        self._observation = 0
        self.announce: dict | None = None  # what the next measurement carries as its environment
        self.distractors = {t: self._seated(h) for t, h in instance.distractors.items()}

    def _seated(self, hole: str, pose: RackPose | None = None) -> np.ndarray:
        mouth = hole_positions(self.contract.rack, pose or self.pose)[hole]
        return mouth + [0.0, 0.0, -self.contract.rack.depth_m + LENGTH / 2]

    def measurement(self, speed: float = 0.0) -> WorldMeasurement:
        objects = {TARGET: ObjectMeasurement(TARGET, "tube", tuple(self.target), UPRIGHT, speed, 0.0,
                                             tuple(sorted(self.target_contacts))),
                   RACK_OBJECT: ObjectMeasurement(RACK_OBJECT, "rack", tuple(self.pose.center),
                                                  yaw_quat(self.pose.yaw_rad), 0.0, 0.0),
                   TCP_OBJECT: ObjectMeasurement(TCP_OBJECT, "gripper", tuple(self.tcp), UPRIGHT, 0.0, 0.0)}
        for name, p in self.distractors.items():
            objects[name] = ObjectMeasurement(name, "tube", tuple(p), UPRIGHT, 0.0, 0.0, (RACK_OBJECT,))
        announce, self.announce = self.announce, None
        return WorldMeasurement(t=round(self.t, 6), objects=objects, gripper_closing=self.closing,
                                environment=announce)

    def step(self, n: int = 1, speed: float = 0.0) -> None:
        for _ in range(n):
            self.t += DT
            self.records += self.referee.step(self.measurement(speed))

    def observe(self) -> None:
        self._observation += 1
        self.records += self.referee.deliver_observation(f"obs{self._observation}", round(self.t, 6))

    def grasp_target(self) -> None:
        self.closing, self.target_contacts = True, set(GRIP) | (self.target_contacts - {TABLE})
        self.step(8)

    def carry_target_down_into(self, hole: str) -> None:
        """The held tube's bottom descends from 7 cm to 1 cm above the hole's opening."""
        mouth = hole_positions(self.contract.rack, self.pose)[hole]
        for k in range(16):
            self.target = mouth + [0.0, 0.0, 0.07 - k * 0.004 + LENGTH / 2]
            self.tcp = self.target + [0.0, 0.0, 0.02]
            self.step(speed=0.2)

    def release_seated_in(self, hole: str, seconds: float = 0.8) -> None:
        self.closing = False
        self.target = self._seated(hole)
        self.target_contacts = {RACK_OBJECT}
        self.tcp = self.target + [0.0, 0.0, 0.15]
        self.step(int(seconds / DT))

    def turn_rack(self, yaw: float, in_stream: bool = False, valid: bool = True) -> None:
        """The occluded transition: the rack turns, every tube in it keeps its local pose.
        in_stream: announced as lab_sim does, with the next measurement (else by a call)."""
        old = self.pose
        self.pose = RackPose(old.center, old.yaw_rad + yaw)
        rot = self.pose.rotation() @ old.rotation().T
        centre = np.asarray(old.center)
        self.target = rot @ (self.target - centre) + centre
        self.distractors = {n: rot @ (p - centre) + centre for n, p in self.distractors.items()}
        detail = {"id": "tr-1", "yaw_change_rad": yaw, "valid": valid}
        if in_stream:
            self.announce = {"transition": detail}
            self.step()
        else:
            self.records += self.referee.environment_transition(round(self.t, 6), detail)

    def hand_descends_over(self, world_xy) -> None:
        """The open hand's grip point comes down over a point, from 12 to 6 cm above the top face."""
        top = self.pose.center[2]
        for k in range(16):
            self.tcp = np.array([world_xy[0], world_xy[1], top + 0.12 - k * 0.004])
            self.step()

    def events(self, category: str) -> list[dict]:
        return [r for r in self.records if r.get("record") == "event" and r["category"] == category]

    def scores(self) -> dict:
        return self.referee.scores()


def _basic():
    return generate("basic", "same", 1, task_seed=0, layout_seed=3, policy_seed=0)[0]


def place_with_deviation(s: Stream, intended: str, settled: str) -> None:
    s.step(2)
    s.observe()
    s.grasp_target()
    s.carry_target_down_into(intended)
    s.release_seated_in(settled)
    s.tcp = s.tcp + [0.0, 0.0, 0.1]
    s.step(5)
    s.observe()  # the withdraw opportunity (legal: Wait)


def placed_and_occluded(hole: str) -> Stream:
    """A basic episode up to its retrieval opportunity: the target placed in `hole`, the
    rack still through the occlusion, the first observation after it delivered."""
    s = Stream(_basic())
    place_with_deviation(s, intended=hole, settled=hole)
    s.turn_rack(0.0)
    s.step(2)
    s.observe()
    return s


def test_a_tube_that_settles_in_b2_when_b3_was_intended_is_retrieved_from_b2():
    for approached, correct in (("B2", True), ("B3", False)):
        s = Stream(_basic())
        place_with_deviation(s, intended="B3", settled="B2")
        (choice,) = [e for e in s.events("choice") if e["detail"].get("scored")]
        assert choice["operation"]["destination"] == "B3" and choice["detail"]["correct"]
        (placed,) = s.events("placement_confirmed")
        assert placed["detail"] == {"hole": "B2", "intended_hole": "B3", "deviation": True}
        (failure,) = s.events("execution_failure")  # aimed at B3, seated in B2
        assert failure["detail"] == {"seated_in": "B2", "failure": "other_destination"}
        s.turn_rack(0.0)  # the basic condition's occlusion: the rack stays
        s.step(2)
        s.observe()
        s.hand_descends_over(hole_positions(s.contract.rack, s.pose)[approached][:2])
        scores = s.scores()
        entry = scores["placement"].pop("guide_entry")
        assert scores["placement"] == {"intended_hole": "B3", "placed_hole": "B2", "deviation": True}
        assert entry["hole"] == "B2"  # where its bottom passed the top face (this stream: at the release)
        r = scores["retrieval"]
        assert (r["reached"], r["reference_hole"], r["chosen_hole"], r["correct"]) == (True, "B2", approached, correct)
        legal = [e for e in s.events("choice") if e["operation"]["type"] == "pick"]
        assert legal[0]["detail"]["legal_set"] == [retrieve(TARGET, "B2").to_dict()]


def test_after_a_half_turn_the_label_counts_not_the_old_world_position():
    instance = next(i for i in generate("extended", "same", 4, task_seed=0, layout_seed=7, policy_seed=0)
                    if i.movement == "rotate_180")
    free = next(h for h in ("B2", "B3", "A2", "C3") if h not in instance.distractors.values())
    for by_label in (True, False):
        s = Stream(instance, "extended")
        old_world = hole_positions(s.contract.rack, s.pose)[free]
        place_with_deviation(s, intended=free, settled=free)
        s.turn_rack(math.pi)
        s.step(2)
        s.observe()
        s.hand_descends_over(hole_positions(s.contract.rack, s.pose)[free][:2] if by_label else old_world[:2])
        r = s.scores()["retrieval"]
        assert r["correct"] is by_label and r["reference_hole"] == free
        assert r["old_world_position_hole"] not in (None, free)  # the hole now at the old position
        if not by_label:
            assert r["chosen_hole"] == r["old_world_position_hole"]


def test_the_first_approach_is_kept_when_a_later_one_corrects_it():
    s = placed_and_occluded("A1")
    holes = hole_positions(s.contract.rack, s.pose)
    s.hand_descends_over(holes["C4"][:2])  # wrong first
    s.hand_descends_over(holes["A1"][:2])  # then right
    r = s.scores()["retrieval"]
    assert (r["chosen_hole"], r["correct"]) == ("C4", False)
    (revision,) = s.events("choice_revision")
    assert revision["operation"]["destination"] == "A1" and revision["detail"]["correct"] is True


def test_no_retrieval_opportunity_before_the_transition_and_an_early_approach_is_wrong():
    s = Stream(_basic())
    place_with_deviation(s, intended="B1", settled="B1")
    s.hand_descends_over(hole_positions(s.contract.rack, s.pose)["B1"][:2])
    scores = s.scores()
    assert scores["retrieval"]["reached"] is False and scores["retrieval"]["chosen_hole"] is None
    premature = [e for e in s.events("choice") if e["operation"]["type"] == "pick"]
    assert premature and premature[0]["detail"]["correct"] is False  # legal was Wait
    # The premature approach neither blocks nor stands in for the retrieval choice.
    s.tcp = s.tcp + [0.0, 0.0, 0.1]
    s.turn_rack(0.0)
    s.step(2)
    assert s.scores()["retrieval"]["reached"] is False  # the opportunity opens with the next delivery
    s.observe()
    s.hand_descends_over(hole_positions(s.contract.rack, s.pose)["B1"][:2])
    r = s.scores()["retrieval"]
    assert (r["reached"], r["chosen_hole"], r["correct"]) == (True, "B1", True)


def test_a_choice_before_the_retrieval_observation_is_recorded_but_not_scored():
    s = Stream(_basic())
    place_with_deviation(s, intended="A2", settled="A2")
    s.turn_rack(0.0)
    s.step(2)
    s.hand_descends_over(hole_positions(s.contract.rack, s.pose)["A2"][:2])  # no observation delivered yet
    unscored = [e for e in s.events("choice") if e["operation"]["type"] == "pick"]
    assert unscored and unscored[-1]["detail"] == {"scored": False, "reason": "no_delivered_evidence"}
    assert s.scores()["retrieval"]["chosen_hole"] is None


def test_a_descent_after_a_finger_touched_a_tube_is_no_pre_contact_approach():
    s = placed_and_occluded("C2")
    s.target_contacts = {RACK_OBJECT, LEFT_FINGER}  # a finger touches the tube, then lets go
    s.step(3)
    s.target_contacts = {RACK_OBJECT}
    s.hand_descends_over(hole_positions(s.contract.rack, s.pose)["C2"][:2])
    assert s.scores()["retrieval"]["chosen_hole"] is None


def test_retrieval_and_delivery_complete_the_task_after_three_seconds_in_the_region():
    s = placed_and_occluded("A3")
    s.hand_descends_over(hole_positions(s.contract.rack, s.pose)["A3"][:2])
    s.grasp_target()
    s.target = s.target + [0.0, 0.0, 0.06]  # lifted out of its hole
    s.step(3, speed=0.1)
    assert s.events("retrieval_confirmed") and s.scores()["retrieval"]["retrieved"] is True
    assert any(e["detail"].get("from_hole") == "A3" for e in s.events("execution_confirmed"))
    s.observe()  # the delivery opportunity
    (cx, cy), _half = RELEASE_REGION
    s.target = np.array([cx, cy, LENGTH / 2])
    s.closing, s.target_contacts = False, {TABLE}
    s.step(int(2.5 / DT))
    assert s.scores()["physically_complete"] is None  # not yet: 3 s
    s.step(int(1.0 / DT))
    scores = s.scores()
    assert scores["physically_complete"] is True and s.referee.finished == "completed"
    deliver = [e for e in s.events("choice") if e["operation"]["type"] == "remove"]
    assert deliver and deliver[0]["detail"]["correct"] is True


@pytest.mark.parametrize("bad, failing", [("tilted", "upright"), ("shallow", "deep"), ("off_centre", "centred"),
                                          ("held", "released"), ("unsupported", "supported"), ("moving", "still")])
def test_a_placement_is_confirmed_only_when_every_seating_check_holds(bad, failing):
    """Each case breaks exactly one check of the seating predicate, and no placement is confirmed."""
    from labference_ros.tasks.placement_recall.recognisers import seat_check

    s = Stream(_basic())
    s.step(2)
    s.observe()
    s.grasp_target()
    s.carry_target_down_into("B4")
    bottom = s._seated("B4") - [0.0, 0.0, LENGTH / 2]
    orientation, speed = UPRIGHT, 0.0
    contacts = {RACK_OBJECT}
    if bad == "tilted":  # a 15 degree lean about the tube's bottom, still centred in the hole
        tilt = math.radians(15.0)
        orientation = (math.cos(tilt / 2), math.sin(tilt / 2), 0.0, 0.0)
        s.target = bottom + [0.0, -math.sin(tilt) * LENGTH / 2, math.cos(tilt) * LENGTH / 2]
    else:
        s.target = s._seated("B4") + {"shallow": [0.0, 0.0, 0.02], "off_centre": [0.005, 0.0, 0.0]}.get(bad, [0, 0, 0])
    if bad == "held":
        contacts |= GRIP
    if bad == "unsupported":
        contacts = set()
    if bad == "moving":
        speed = 0.02
    s.closing = bad == "held"
    s.target_contacts = contacts
    measured = s.measurement(speed)
    target = measured.objects[TARGET]
    target = ObjectMeasurement(target.name, target.kind, target.position, orientation, speed, 0.0, target.contacts)
    assert seat_check(target, s.pose, s.contract).failures == (failing,)
    for _ in range(50):
        s.t += DT
        objects = {**s.measurement(speed).objects, TARGET: target}
        s.records += s.referee.step(WorldMeasurement(t=round(s.t, 6), objects=objects, gripper_closing=s.closing))
    assert not s.events("placement_confirmed")
    assert s.scores()["placement"]["placed_hole"] is None


def test_a_transition_announced_in_the_measurement_stream_opens_retrieval_as_a_call_does():
    instance = next(i for i in generate("extended", "same", 4, task_seed=0, layout_seed=7, policy_seed=0)
                    if i.movement == "rotate_180")
    free = next(h for h in ("B2", "B3", "A2", "C3") if h not in instance.distractors.values())
    outcomes = []
    for in_stream in (False, True):
        s = Stream(instance, "extended")
        place_with_deviation(s, intended=free, settled=free)
        s.turn_rack(math.pi, in_stream=in_stream)
        s.step(2)
        s.observe()
        s.hand_descends_over(hole_positions(s.contract.rack, s.pose)[free][:2])
        (transition,) = s.events("environment_transition")
        assert transition["detail"]["phase_before"] == "withdraw" and not s.events("validity")
        outcomes.append((s.scores()["retrieval"], s.scores()["environment_transitions"]))
    untimed = [{k: v for k, v in r.items() if k != "t"} for r, _ in outcomes]  # the stream's step comes later
    assert untimed[0] == untimed[1] and untimed[1]["correct"] is True and untimed[1]["chosen_hole"] == free
    assert [t["valid"] for t in outcomes[1][1]] == [True]


def test_an_invalid_or_premature_transition_is_a_validity_event():
    s = Stream(_basic())
    s.step(2)
    s.turn_rack(0.0, in_stream=True)  # before any placement
    (premature,) = s.events("validity")
    assert "not after a confirmed placement" in premature["detail"]["reasons"][0]
    assert s.scores()["retrieval"]["reached"] is False

    s = Stream(_basic())
    place_with_deviation(s, intended="B3", settled="B3")
    s.turn_rack(0.0, in_stream=True, valid=False)
    (invalid,) = s.events("validity")
    assert invalid["detail"]["reasons"] == ["transition did not keep every tube's pose relative to the rack"]
    assert s.scores()["environment_transitions"] == [{"id": "tr-1", "t": invalid["t"], "valid": False,
                                                  "object_generations": None}]


def test_an_environment_event_the_family_does_not_know_is_recorded_not_lost():
    s = Stream(_basic())
    s.announce = {"lights": "off"}
    s.step()
    (unknown,) = s.events("validity")
    assert unknown["detail"] == {"reason": "unknown environment event", "environment": {"lights": "off"}}


@pytest.mark.parametrize("offset_m, within", [(0.002, True), (0.005, False)])
def test_the_placements_entry_into_the_guides_is_measured_against_the_handoff_tolerance(offset_m, within):
    s = Stream(_basic())
    s.step(2)
    s.observe()
    s.grasp_target()
    mouth = hole_positions(s.contract.rack, s.pose)["B2"]
    beside = s.pose.rotation() @ np.array([offset_m, 0.0, 0.0])  # along the rack's rows, off the hole's axis
    for height in (0.012, 0.006, -0.002, -0.010):  # the tube's bottom above, then below, the top face
        s.target = mouth + beside + [0.0, 0.0, height + LENGTH / 2]
        s.step(speed=0.2)
    entry = s.scores()["placement"]["guide_entry"]
    assert s.contract.guide_handoff.lateral_m == pytest.approx(0.0035)  # the guides' clearance around the tube
    assert entry["hole"] == "B2" and entry["lateral_offset_m"] == pytest.approx(offset_m, abs=1e-6)
    assert entry["within_tolerance"] is within and entry["t"] == pytest.approx(s.t - DT)


def test_the_report_counts_guide_entries_within_the_tolerance():
    from labference_ros.tasks.placement_recall.evaluation import report_lines

    entry = {"hole": "B2", "lateral_offset_m": 0.002, "tilt_deg": 0.3, "within_tolerance": True}
    scores = [{"placement": {"placed_hole": "B2", "guide_entry": entry}},
              {"placement": {"placed_hole": None, "guide_entry": {**entry, "within_tolerance": False}}},
              {"placement": {"placed_hole": "A1", "guide_entry": None}}]  # a checkpoint's: placed by its prefix
    line = report_lines(scores)["placement"]
    assert line.startswith("placed 2/3,") and line.endswith("within the handoff tolerance 1/2"), line
    scores[0]["commitment"] = {"identified": 1, "correct": 1, "agreement": 0.0, "agreement_n": 1, "agreeing": 0}
    scores[1]["commitment"] = {"identified": 1, "correct": 0, "agreement": 1.0, "agreement_n": 1, "agreeing": 1}
    assert report_lines(scores)["commitment"] == \
        "symbolic commitments 2 in 2/3 episodes, correct 1/2; agreeing with where the hand went 1/2"


def test_symbolic_commitments_and_slot_reports_are_scored_on_separate_tracks():
    s = placed_and_occluded("B2")
    ref = s.referee
    commit = [r for r in ref.report_operation(retrieve(TARGET, "B2"), s.t, source="commitment:memory")
              if r["record"] == "report"]
    report = [r for r in ref.report_operation(retrieve(TARGET, "C4"), s.t, source="memory")
              if r["record"] == "report"]
    again = [r for r in ref.report_operation(retrieve(TARGET, "A1"), s.t, source="commitment:memory")
             if r["record"] == "report"]
    assert commit[0]["track"] == "commitment" and commit[0]["scored"] and commit[0]["correct"] is True
    assert "track" not in report[0] and report[0]["scored"] and report[0]["correct"] is False
    assert again[0]["scored"] is False and again[0]["reason"] == "not_first_report"  # the first one stands
    s.hand_descends_over(hole_positions(s.contract.rack, s.pose)["A1"][:2])  # the hand goes elsewhere
    scores = s.scores()
    # Over the retrieval's opportunity alone (the commitments are retrieval commitments).
    assert (scores["commitment"]["population"], scores["commitment"]["B_next"]) == (1, 1.0)
    assert scores["commitment"]["agreement"] == 0.0  # named B2, reached over A1
    assert scores["explicit"]["correct"] == 0 and scores["explicit"]["identified"] == 1
    assert scores["retrieval"]["chosen_hole"] == "A1" and scores["retrieval"]["correct"] is False


def test_a_tube_lowered_beside_the_rack_makes_no_guide_entry():
    s = Stream(_basic())
    s.step(2)
    s.observe()
    s.grasp_target()
    beside = np.asarray(s.pose.center) + s.pose.rotation() @ np.array([s.contract.rack.half_size[0] + 0.03, 0, 0])
    for height in (0.012, -0.002, -0.010):  # its bottom below the top face's height, off the rack
        s.target = beside + [0.0, 0.0, height + LENGTH / 2]
        s.step(speed=0.2)
    assert s.scores()["placement"]["guide_entry"] is None


def _failure_kinds(referee) -> list[str]:
    return [e["detail"].get("failure") for e in referee.events if e["category"] == "execution_failure"]


def test_a_retrieved_target_that_slips_back_undoes_the_retrieval():
    ref = _protocol_streams().slip()
    (undone,) = [e for e in ref.events if e["category"] == "retrieval_undone"]
    assert undone["detail"] == {"hole": "B2"}
    assert _failure_kinds(ref).count("slip") == 2  # the delivery under way, and the retrieval it undid
    retrievals = [o for o in ref.opportunities if any(op.type == "pick" for op in o.legal_set)]
    assert [o.execution for o in retrievals] == ["failed", "confirmed"]  # the retry, a new opportunity
    assert len([e for e in ref.events if e["category"] == "retrieval_confirmed"]) == 2
    assert ref.scores()["completion_class"] == "recovered"


def test_a_target_let_go_on_a_guide_leaves_its_placement_unfinished():
    ref = _protocol_streams().premature_advancement()
    (unfinished,) = [e for e in ref.events if e["category"] == "placement_unfinished"]
    assert unfinished["detail"]["hole"] == "B2" and "deep" in unfinished["detail"]["failures"]
    assert _failure_kinds(ref) == ["unfinished"]
    assert ref.z.phase == "place" and ref.z.placed_hole is None
    assert [e["detail"]["reason"] for e in ref.events if e["category"] == "premature_advancement"] == [
        "placement_unconfirmed"]


def test_coming_down_over_the_unfinished_targets_own_hole_is_a_retry_not_an_advancement():
    s = Stream(_basic())
    s.step(2)
    s.observe()
    s.grasp_target()
    s.carry_target_down_into("B2")
    s.closing, s.target_contacts = False, {RACK_OBJECT}
    s.target = s._seated("B2") + [0.0, 0.0, 0.025]  # let go shallow: the placement is unfinished
    s.tcp = s.target + [0.0, 0.0, 0.15]
    s.step(40)
    assert s.events("placement_unfinished")
    s.hand_descends_over(hole_positions(s.contract.rack, s.pose)["B2"][:2])
    assert s.events("approach") and not s.events("premature_advancement")


def test_a_delivery_outside_the_marked_region_is_a_failed_delivery():
    ref = _protocol_streams().release_outside_region()
    assert _failure_kinds(ref) == ["released_outside_region"]
    assert ref.scores()["physically_complete"] is None and ref.legal_set()[0].type == "remove"


def test_a_delivery_let_go_unseated_in_a_rack_hole_is_a_failed_delivery():
    streams = _protocol_streams()
    s = Stream(_basic())
    s.step(2)
    streams.place(s)
    streams.occlude(s)
    streams.retrieve_from(s)
    s.carry_target_down_into("C4")  # back into the rack, not the marked region
    s.closing, s.target_contacts = False, {RACK_OBJECT}
    s.target = s._seated("C4") + [0.0, 0.0, 0.025]  # let go shallow: not seated, not delivered
    s.tcp = s.target + [0.0, 0.0, 0.15]
    s.step(60)
    failures = [e for e in s.referee.events if e["category"] == "execution_failure"]
    assert [e["detail"].get("failure") for e in failures] == ["released_outside_region"]
    assert failures[0]["detail"]["hole"] == "C4"
    assert s.referee.scores()["physically_complete"] is None


def _protocol_streams():
    """This family's conformance streams (protocol_streams.py beside this file), loaded under
    a name of their own: every family's module has the same file name."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).with_name("protocol_streams.py")
    spec = importlib.util.spec_from_file_location("placement_recall_protocol_streams", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
