"""The centrifuge referee on synthetic measurement streams: the choice is the
first directed approach to a slot, its execution the tube seated there, and the
second destination follows where the first tube actually settled."""
from __future__ import annotations

import math

import numpy as np

from labference_ros.core.measurements import LEFT_FINGER, RIGHT_FINGER, ObjectMeasurement, WorldMeasurement
from labference_ros.tasks.centrifuge.contract import contract_for
from labference_ros.tasks.centrifuge.insertion import ROTOR
from labference_ros.tasks.centrifuge.instances import generate
from labference_ros.tasks.centrifuge.referee import Referee
from labference_ros.tasks.centrifuge.rotor import slot_frames

DT = 0.02
FINGERS = (LEFT_FINGER, RIGHT_FINGER)


def _quaternion_from_z(up):
    up = np.asarray(up, float) / np.linalg.norm(up)
    axis = np.cross([0.0, 0.0, 1.0], up)
    s = float(np.linalg.norm(axis))
    if s < 1e-12:
        return (1.0, 0.0, 0.0, 0.0)
    h = math.atan2(s, float(up[2])) / 2
    return (math.cos(h), *(math.sin(h) * axis / s))


class Cell:
    """Tubes moved by script; every step is one measurement the referee is given,
    and an observation is delivered every 0.5 s, as the episode loop would."""

    def __init__(self, instance, contract):
        self.referee = Referee(contract, instance, episode_id="ep", deadline_s=60.0)
        self.contract, self.t, self.k = contract, 0.0, 0
        self.frames = slot_frames(contract.rotor, instance.rotor_pose)
        self.tubes = {}
        for name, slot in instance.seated.items():
            self.tubes[name] = self._in_slot(slot, 0.9, (ROTOR,))
        for name, (x, y) in instance.stand.items():
            self.tubes[name] = (np.array([x, y, 0.02]), np.array([0.0, 0.0, -1.0]), ("table",))
        self.closing = False

    def _in_slot(self, slot, fraction, contacts):
        f = self.frames[slot]
        return (f.mouth + fraction * self.contract.rotor.socket_depth_m * f.axis, f.axis.copy(), contacts)

    def measure(self):
        objects = {}
        for name, (bottom, down, contacts) in self.tubes.items():
            center = bottom - down * self.contract.tube.length_m / 2
            objects[name] = ObjectMeasurement(name, "tube", tuple(center), _quaternion_from_z(-down), 0.0, 0.0,
                                              tuple(contacts))
        return WorldMeasurement(t=round(self.t, 9), objects=objects, gripper_closing=self.closing)

    def run(self, seconds):
        for _ in range(int(round(seconds / DT))):
            self.referee.step(self.measure())
            if self.k % 25 == 0:
                self.referee.deliver_observation(f"obs{self.k}", round(self.t, 9), "s")
            self.k += 1
            self.t += DT

    def grasp(self, tube):
        bottom, down, _ = self.tubes[tube]
        self.closing = True
        self.tubes[tube] = (bottom + [0, 0, 0.05], down, FINGERS)
        self.run(0.3)

    def insert(self, tube, aim_slot, settle_slot=None, fraction=0.9):
        """Carry the tube above aim_slot, descend along its axis (the directed
        approach), then let it settle in settle_slot (default: the aimed one)."""
        f = self.frames[aim_slot]
        for k in range(26):  # from 6 cm above the mouth to just inside it, over 0.5 s
            self.tubes[tube] = (f.mouth + (-0.06 + 0.0025 * k) * f.axis, f.axis.copy(), FINGERS)
            self.run(DT)
        self.closing = False
        self.tubes[tube] = self._in_slot(aim_slot if settle_slot is None else settle_slot, fraction, (ROTOR,))
        self.run(0.8)


def test_basic_opposite_slot_chosen_seated_and_held_completes():
    inst = generate("basic", 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
    j = inst.seated["tube_a"]
    cell = Cell(inst, contract_for("basic"))
    cell.run(0.5)
    cell.grasp("tube_b")
    cell.insert("tube_b", (j + 6) % 12)
    cell.run(3.5)
    s = cell.referee.scores()
    assert s["finished"] == "completed" and s["completion_class"] == "clean"
    assert s["first_choice_correct"] is True and s["executed"] is True
    first = next(o for o in s["opportunity_records"] if o["first_choice"])
    assert first["first_choice"] == {"type": "insert", "object": "tube_b", "destination": f"slot_{(j + 6) % 12:02d}"}


def test_basic_wrong_slot_is_a_wrong_choice_executed_and_never_completes():
    inst = generate("basic", 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
    j = inst.seated["tube_a"]
    cell = Cell(inst, contract_for("basic"))
    cell.run(0.5)
    cell.grasp("tube_b")
    cell.insert("tube_b", (j + 5) % 12)
    cell.run(4.0)
    s = cell.referee.scores()
    assert s["first_choice_correct"] is False and s["executed"] is True  # choosing and seating are separate
    assert s["physically_complete"] is None and s["finished"] is None
    assert cell.referee.legal_set()[0].type == "pick"  # take it out again


def test_extended_the_second_destination_follows_where_the_first_tube_settled():
    inst = generate("extended", 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
    cell = Cell(inst, contract_for("extended"))
    cell.run(0.5)
    cell.grasp("tube_a")
    cell.insert("tube_a", aim_slot=1, settle_slot=2)  # meant for slot 1, settled in slot 2
    cell.run(0.5)
    ref = cell.referee
    assert ref.z.first_intended_slot == 1 and ref.z.seated == {"tube_a": 2}
    assert [str(op) for op in ref.legal_set()] == ["insert(tube_b->slot_08)"]
    # A plan follower inserts opposite the slot it intended (7): a wrong choice.
    follower = Cell(inst, contract_for("extended"))
    follower.run(0.5)
    follower.grasp("tube_a")
    follower.insert("tube_a", aim_slot=1, settle_slot=2)
    follower.run(0.5)
    follower.grasp("tube_b")
    follower.insert("tube_b", 7)
    last = [o for o in follower.referee.scores()["opportunity_records"] if o["first_choice"]][-1]
    assert last["first_choice"]["destination"] == "slot_07" and last["choice_correct"] is False
    # Following the outcome instead: slot 8, correct, and the pair completes.
    cell.grasp("tube_b")
    cell.insert("tube_b", 8)
    cell.run(3.5)
    s = cell.referee.scores()
    assert s["finished"] == "completed" and s["seated"] == {"tube_a": "slot_02", "tube_b": "slot_08"}
    assert s["first_intended_slot"] == "slot_01"
    chosen = [o for o in s["opportunity_records"] if o["first_choice"]]
    assert [o["execution"] for o in chosen] == ["failed", "confirmed"]  # settled elsewhere, then seated
    assert [o["choice_correct"] for o in chosen] == [True, True]


def test_a_shallow_release_leaves_the_placement_unfinished():
    inst = generate("extended", 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
    cell = Cell(inst, contract_for("extended"))
    cell.run(0.5)
    cell.grasp("tube_b")
    cell.insert("tube_b", 4, fraction=0.3)
    cell.run(0.5)
    ref = cell.referee
    assert ref.z.seated == {} and ref.z.unfinished == {"tube_b": 4}
    assert all(op.object == "tube_b" for op in ref.legal_set())
    assert ref.scores()["executed"] is False
    assert any(e["category"] == "insertion_unfinished" for e in ref.events)


def test_a_slow_approach_where_the_neighbours_axes_are_also_near_is_to_the_nearest_socket():
    """Above the rotor the sockets' axis lines converge: 6 cm above a mouth the neighbours'
    lines pass 13-15 mm away, inside the recogniser's lateral bound. A tube descending
    slowly along one socket's axis there is approaching that socket, not the first of
    the candidates in slot order."""
    inst = next(i for i in generate("basic", 12, 0, 0, 0) if (i.seated["tube_a"] + 6) % 12 >= 1)
    contract = contract_for("basic")
    cell = Cell(inst, contract)
    cell.run(0.5)
    cell.grasp("tube_b")
    target = (inst.seated["tube_a"] + 6) % 12
    f = cell.frames[target]
    for k in range(20):  # 1 mm per step: 0.2 s within reach of both neighbours' axes
        cell.tubes["tube_b"] = (f.mouth + (-0.06 + 0.001 * k) * f.axis, f.axis.copy(), FINGERS)
        cell.run(DT)
    choices = [e for e in cell.referee.events if e.get("category") == "choice"]
    assert choices and choices[0]["operation"]["destination"] == f"slot_{target:02d}", choices


def test_an_unreleased_insertion_leaves_the_placement_unfinished_and_advancing_is_premature():
    """Paper 4.1: "a shallow or unreleased insertion leaves its placement unfinished" and
    "the robot must complete that placement before advancing"."""
    inst = generate("extended", 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
    cell = Cell(inst, contract_for("extended"))
    cell.run(0.5)
    cell.grasp("tube_a")
    f = cell.frames[3]
    for k in range(26):
        cell.tubes["tube_a"] = (f.mouth + (-0.06 + 0.0025 * k) * f.axis, f.axis.copy(), FINGERS)
        cell.run(DT)
    cell.closing = False  # the gripper opens, but a finger still holds the tube in the socket
    cell.tubes["tube_a"] = cell._in_slot(3, 0.9, (ROTOR, LEFT_FINGER))
    cell.run(0.8)
    ref = cell.referee
    (unfinished,) = [e for e in ref.events if e["category"] == "insertion_unfinished"]
    assert unfinished["detail"]["unreleased"] is True and "released" in unfinished["detail"]["failures"]
    (failure,) = [e for e in ref.events if e["category"] == "execution_failure"]
    assert failure["detail"]["failure"] == "unfinished" and ref.scores()["executed"] is False
    assert ref.z.unfinished == {"tube_a": 3} and all(op.object == "tube_a" for op in ref.legal_set())
    cell.grasp("tube_b")
    (premature,) = [e for e in ref.events if e["category"] == "premature_advancement"]
    assert premature["object"] == "tube_b" and "tube_a" in premature["detail"]["reason"]


def test_a_pick_that_slips_back_into_its_socket_is_undone():
    ref = _protocol_streams().slip()
    kinds = [e["detail"].get("failure") for e in ref.events if e["category"] == "execution_failure"]
    assert "slip" in kinds
    removed = [e for e in ref.events if e["category"] == "tube_removed"]
    assert len(removed) == 2  # taken out, fell back, taken out again
    picks = [e for e in ref.events if e["category"] == "execution_confirmed" and e["operation"]["type"] == "pick"]
    assert len(picks) == 2 and ref.scores()["completion_class"] == "recovered"


def test_a_tube_dropped_on_the_table_after_a_correct_approach_is_a_drop():
    ref = _protocol_streams().release_outside_region()
    s = ref.scores()
    (failure,) = [e for e in ref.events if e["category"] == "execution_failure"]
    assert failure["detail"]["failure"] == "drop" and failure["operation"]["type"] == "insert"
    assert s["first_choice_correct"] is True and s["executed"] is False
    # The failed attempt is new evidence: the retry will be a new opportunity's choice.
    assert [o.trigger for o in ref.opportunities][-1] == "failed_attempt"


def test_taking_the_other_tube_after_a_drop_is_premature_advancement():
    """4.1: if insertion fails, the robot must complete that placement before advancing."""
    streams = _protocol_streams()
    cell = streams.ProtocolCell("extended")
    cell.run(0.5)
    cell.grasp("tube_a")
    cell.approach("tube_a", 1)
    cell.drop_on_table("tube_a", seconds=3.0)  # let go over the slot: it lands on the table, a settled drop
    ref = cell.referee
    assert [e["detail"].get("failure") for e in ref.events if e["category"] == "execution_failure"] == ["drop"]
    cell.grasp("tube_b")
    cell.run(0.5)
    (early,) = [e for e in ref.events if e["category"] == "premature_advancement"]
    assert early["detail"]["reason"] == "previous_placement_unfinished:tube_a"


def _protocol_streams():
    """This family's conformance streams (protocol_streams.py beside this file), loaded under
    a name of their own: every family's module has the same file name."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).with_name("protocol_streams.py")
    spec = importlib.util.spec_from_file_location("centrifuge_protocol_streams", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_interventions_are_scope_checked_as_every_familys():
    # The shared check (core/oracle_scope.py): the same reasons as weighing's and placement
    # recall's, and a state names slots by their labels.
    from labference_ros.core.operations import insert

    inst = generate("basic", 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
    cell = Cell(inst, contract_for("basic"))
    cell.run(0.5)
    ref = cell.referee
    opp = ref.book.current
    legal = sorted(opp.legal_set)[0]

    def receipt(site, payload, **binding):
        iv = {"mode": "replace", "site": site, "payload": payload, "opportunity_id": opp.id,
              "evidence_version": ref.z.evidence_version, **binding}
        return ref.check_intervention(iv, cell.t)[0]

    seated = f"slot_{inst.seated['tube_a']:02d}"
    r = receipt("state", {"occupied_slots": [seated]})
    assert (r["status"], r["reasons"], len(r["payload_id"])) == ("delivered", [], 64)
    assert receipt("decision", {"operation": legal.to_dict()})["status"] == "delivered"
    wrong = insert("tube_b", seated)  # into the occupied slot: never legal
    assert receipt("decision", {"operation": wrong.to_dict()})["reasons"] == ["operation_not_legal"]
    assert receipt("state", {"occupied_slots": ["slot_99"]})["reasons"] == ["occupied_slots_invalid"]
    assert receipt("state", {"occupied_slots": [], "first_intended_slot": "slot_00"})["reasons"] == \
        ["hidden_fields:first_intended_slot", "undeclared_fields:first_intended_slot"]
    assert receipt("state", {"occupied_slots": []}, opportunity_id=opp.id + 7, evidence_version=0)["reasons"] == \
        ["stale_or_unbound_opportunity", "stale_evidence_version"]
    ref.finish(cell.t, "test")
    late = receipt("state", {"occupied_slots": []})
    assert (late["status"], late["reasons"]) == ("late", ["late"])
