"""The Franka safety envelope (safety:=franka) on the cell's real kinematics: the
pilot's reference systems run inside it, and a chunk into the table is refused.
In the robot modes (safety:=fr3, panda) the arm and hand also keep clear of the
episode's fixtures (skills.fixture_contacts), on the rows and between them."""
from __future__ import annotations

import numpy as np
import pytest

from closed_loop import run_episode
from labference_ros.core.robots import FR3
from labference_ros.policies import make
from labference_ros.skills.fixture_contacts import FixtureContacts, fixture_scene
from labference_ros.skills.kinematics import FingertipKinematics, cell_envelope, envelope_check
from labference_ros.skills.safety_modes import safety_check, with_fixtures
from labference_ros.tasks import family as task_family
from labference_ros.tasks.weighing.instances import generate

HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


@pytest.mark.parametrize("robot", [None, FR3], ids=["franka", "fr3"])
@pytest.mark.parametrize("condition, seed", [("basic", 1), ("extended", 3)])
def test_the_scripted_expert_completes_inside_the_envelope_with_no_chunk_refused(condition, seed, robot):
    # fr3: the FR3's limits, its position-dependent velocity and jerk, between rows too.
    instance = generate(condition, 1, task_seed=seed, layout_seed=seed, policy_seed=0)[0]
    result = run_episode(make("scripted_expert"), instance, max_s=60.0,
                         envelope=envelope_check(cell_envelope(robot=robot)))
    try:
        assert result.chunks > 0 and result.rejected == []
        assert result.scores["valid_complete"] is True
    finally:
        result.backend.close()


def test_a_descent_through_the_table_is_refused_on_the_real_kinematics():
    kinematics = FingertipKinematics()
    envelope = cell_envelope()
    start = kinematics.positions(HOME[None])[0]
    assert start[2] > 0.3
    # The shoulder leans forward (joint 2 by 1.8 rad, joint 4 by 0.5 rad): the fingertips
    # end below the table top.
    rows = np.array([HOME + np.array([0, 1.8, 0, 0.5, 0, 0, 0]) * (k + 1) / 90 for k in range(90)])
    tips = kinematics.positions(rows)
    assert tips[0][2] > 0.3 and tips[-1][2] < envelope.workspace_min[2]  # really through the table
    slow = 1.0  # seconds per row: only the box is at stake
    reasons = envelope.violations(rows, HOME, None, slow, kinematics.positions)
    assert len(reasons) == 1 and "outside the workspace box" in reasons[0]


def scene_of(family: str, condition: str, seed: int = 0):
    fam = task_family(family)
    instance = fam.generate(condition, 1, seed, seed, 0)[0]
    return instance, fixture_scene(fam, instance)


# The hand low over the table in front of the robot (fingertips 6 cm up, the balance's
# pan to its right): joint 1 turned this far puts it inside the balance.
LOW = HOME + np.array([0.0, 0.8 - HOME[1], 0.0, -1.6 - HOME[3], 0.0, 0.0, 0.0])
INTO_THE_TABLE = HOME + np.array([0.0, 1.1 - HOME[1], 0.0, -1.6 - HOME[3], 0.0, 0.0, 0.0])


def turned(q, joint1):
    out = np.array(q, float)
    out[0] = joint1
    return np.r_[out, 0.08]  # the gripper open


def test_fixture_contacts_name_the_part_and_the_fixture_at_a_row_and_between_rows():
    _instance, scene = scene_of("feedback_weighing", "basic")
    contacts = FixtureContacts(scene)
    assert contacts.touching(np.r_[HOME, 0.08]) is None
    assert contacts.touching(turned(LOW, 0.0)) is None
    part, fixture, depth = contacts.touching(np.r_[INTO_THE_TABLE, 0.08])
    assert fixture == "table" and part in ("link7", "hand", "left_finger", "right_finger") and depth > 0.01
    # Both rows clear, the straight motion between them through the balance's pan.
    rows = np.array([turned(LOW, 0.0), turned(LOW, -0.8)])
    assert contacts.touching(rows[1]) is None
    reason = contacts.first_contact(rows)
    assert "the motion to row 1" in reason and ("pan_plate" in reason or "balance_housing" in reason), reason
    # From a start beside the balance, the first row's own motion is checked.
    assert "the motion to row 0" in contacts.first_contact(rows[1:], start=rows[0][:7])
    assert contacts.first_contact(rows[:1], start=HOME) == ""
    # The objects are what the hand is for: a standard or tube is never a fixture; the
    # display camera over the balance's readout and its post are, the wrist camera is not.
    names = {contacts._name(g) for g in contacts.fixture_geoms}
    assert "table" in names and not any(n.startswith("std_") or n.startswith("sample") for n in names), names
    assert {"display_camera_body", "display_camera_post", "front_camera_body"} <= names, names
    assert not any(n.startswith("wrist") for n in names), names


def test_a_motion_out_of_a_contact_is_allowed_and_one_deeper_into_it_is_not():
    _instance, scene = scene_of("feedback_weighing", "basic")
    contacts = FixtureContacts(scene)
    # The hand a few mm into the table (a setpoint measured there, a handoff, a rig whose
    # table is higher than the layout's): backing out must stay possible.
    stuck = HOME + np.array([0.0, 1.09 - HOME[1], 0.0, -1.2 - HOME[3], 0.0, 0.0, 0.0])
    assert contacts.touching(np.r_[stuck, 0.08])[1] == "table"
    back = np.array([np.r_[stuck - np.array([0, 0.01 * k, 0, 0, 0, 0, 0]), 0.08] for k in range(1, 21)])
    assert contacts.first_contact(back, start=np.r_[stuck, 0.08]) == ""
    deeper = np.array([np.r_[stuck + np.array([0, 0.01 * k, 0, 0, 0, 0, 0]), 0.08] for k in range(1, 21)])
    assert "touches the fixture" in contacts.first_contact(deeper, start=np.r_[stuck, 0.08])


def test_fixtures_the_simulation_does_not_collide_with_still_count():
    _instance, scene = scene_of("feedback_weighing", "basic")
    flags = {n: int(scene.geom(n).contype[0]) for n in ("display_panel", "display_bezel")}
    assert flags == {"display_panel": 0, "display_bezel": 0}  # visual only in the simulation
    contacts = FixtureContacts(scene)
    names = {contacts._name(g) for g in contacts.fixture_geoms}
    assert {"display_panel", "display_bezel"} <= names


def test_the_hand_at_the_display_camera_is_a_contact():
    from labference_ros.skills.ee_ik import HandKinematics
    from labference_ros.skills.motion import TOP_DOWN

    _instance, scene = scene_of("feedback_weighing", "basic")
    contacts = FixtureContacts(scene)
    camera = contacts.data.geom_xpos[scene.geom("display_camera_body").id].copy()
    # The fingertips at the camera, the hand pointing down: the model's own IK, in steps.
    hand, q = HandKinematics(), HOME.copy()
    for _ in range(10):
        q, error = hand.solve(q, camera, TOP_DOWN)
    assert error < 0.01, error
    # Open, the fingers straddle the 5 cm camera; closed, they are in it.
    part, fixture, _depth = contacts.touching(np.r_[q, 0.0])
    assert fixture.startswith("display_camera") and part.endswith("finger"), (part, fixture)


def test_the_robot_modes_refuse_a_chunk_into_a_fixture_and_franka_mode_does_not_look():
    _instance, scene = scene_of("feedback_weighing", "basic")
    slow = 1.0  # seconds per row: only the fixtures are at stake
    rows = np.array([turned(LOW, -0.4 * k / 20) for k in range(1, 21)])
    start = turned(LOW, 0.0)
    reasons = with_fixtures(safety_check("fr3"), scene)(rows, start, None, slow)
    assert len(reasons) == 1 and "touches the fixture" in reasons[0], reasons
    assert safety_check("fr3")(rows, start, None, slow) == []  # the limits alone let it pass
    clear = np.array([turned(LOW, 0.4 * k / 20) for k in range(1, 21)])  # turning the other way
    assert with_fixtures(safety_check("fr3"), scene)(clear, start, None, slow) == []


def no_limits(rows, start, start_velocity, interval_s):
    return []


@pytest.mark.slow
@pytest.mark.parametrize("family, condition, limits", [
    ("feedback_weighing", "extended", "fr3"),
    # These experts' motion exceeds the FR3's 10 rad/s^2 between rows (only weighing has a
    # real launch so far): their fixture clearance alone is checked.
    ("centrifuge_loading", "basic", None), ("placement_recall", "basic-same", None)])
def test_each_familys_expert_completes_clear_of_its_fixtures(family, condition, limits):
    from labference_ros.campaign.certify import deadline_of
    from labference_ros.oracle.continuation import run_in_world
    from labference_ros.oracle.world import World

    instance, scene = scene_of(family, condition, seed=1)
    fam = task_family(family)
    envelope = with_fixtures(safety_check(limits) if limits else no_limits, scene)
    refused = []

    def record(entry):
        if entry.get("record") == "chunk" and entry.get("status") not in ("accepted", "clipped"):
            refused.append(entry.get("reasons"))

    world = World(instance)
    system = make(fam.reference_program, task=family)
    try:
        referee = fam.make_referee(fam.contract_for(condition), instance, episode_id="clear", session_id="clear",
                                   deadline_s=deadline_of(fam))
        world.start_environment()
        system.reset("clear", instance.policy_seed)
        referee.step(world.measure())
        end = run_in_world(system, world, referee, session="clear", deadline_t=deadline_of(fam), stop_hold_s=2.0,
                           record=record, envelope=envelope)
        scores = referee.scores(world.t)
    finally:
        system.close()
        world.close()
    assert refused == []
    assert end != "deadline" and scores["valid_complete"] is True, (end, scores.get("completion_class"))
