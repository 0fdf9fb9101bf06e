"""The occluded environment transition (paper 8.3, eq. 10) in MuJoCo: every tube in
the rack keeps its pose relative to the rack, the rest of the scene stays where
it was, and the state after it is deterministic for a seed."""
import mujoco
import numpy as np
import pytest

from labference_ros.tasks.placement_recall.instances import TARGET, generate
from labference_ros.tasks.placement_recall.rack import LABELS, RackGeometry, hole_positions, hole_under
from labference_ros.tasks.placement_recall.scene import RACK_BODY, seated_position, sim_scene
from labference_ros.tasks.placement_recall.transition import occluded_transition

GEOMETRY = RackGeometry()
POSITION_TOLERANCE_M = 0.001  # after the tubes settle again in their holes
ROTATION_TOLERANCE_DEG = 1.0


def _turned_instance():
    return next(i for i in generate("extended", "distinct", 8, task_seed=0, layout_seed=100, policy_seed=0)
                if i.movement == "rotate_180")


def _settled(instance, placed: str = ""):
    """The scene after 1 s of physics; with `placed`, the target tube stands in that hole
    (as after the robot's placement and retraction)."""
    model = sim_scene(instance).spec.compile()
    data = mujoco.MjData(model)
    if placed:
        joint = model.body(TARGET).jntadr[0]
        adr = model.jnt_qposadr[joint]
        data.qpos[adr:adr + 3] = seated_position(TARGET, placed, instance.rack_pose)
    mujoco.mj_step(model, data, 500)
    return model, data


def _transition(instance, placed: str):
    model, data = _settled(instance, placed)
    record = occluded_transition(model, data, instance.tubes, instance.moved_rack_pose)
    return model, data, record


def test_every_tube_keeps_its_pose_relative_to_the_rack():
    instance = _turned_instance()
    free = [label for label in LABELS if label not in instance.distractors.values()]
    placed = free[0]
    model, data, record = _transition(instance, placed)
    assert record.stable and record.valid and record.settle_s < 1.0
    assert sorted(record.moved) == sorted(instance.tubes)  # the placed target and the three distractors
    for name, moved in record.moved.items():
        assert moved["position_error_m"] <= POSITION_TOLERANCE_M, (name, moved)
        assert moved["rotation_error_deg"] <= ROTATION_TOLERANCE_DEG, (name, moved)
    # Local labels hold, world positions do not: each tube is in its hole of the turned rack,
    # and the old world position of the target's hole is now another hole.
    holes = {**instance.distractors, TARGET: placed}
    for name, label in holes.items():
        assert hole_under(data.body(name).xpos, GEOMETRY, instance.moved_rack_pose) == label
    old_world = hole_positions(GEOMETRY, instance.rack_pose)[placed]
    assert hole_under(old_world, GEOMETRY, instance.moved_rack_pose) not in ("", placed)
    rack = data.body(RACK_BODY)
    assert np.allclose(rack.xpos, instance.moved_rack_pose.center)


def test_a_tube_outside_the_rack_stays_where_it_stands():
    instance = _turned_instance()
    model, data = _settled(instance)
    before = data.body(TARGET).xpos.copy()
    record = occluded_transition(model, data, instance.tubes, instance.moved_rack_pose)
    assert TARGET not in record.moved
    assert np.linalg.norm(data.body(TARGET).xpos - before) < 1e-4


def test_the_state_after_the_transition_is_deterministic():
    instance = _turned_instance()
    placed = next(label for label in LABELS if label not in instance.distractors.values())
    runs = [_transition(instance, placed) for _ in range(2)]
    (_, first, rec1), (_, second, rec2) = runs
    assert np.array_equal(first.qpos, second.qpos) and np.array_equal(first.qvel, second.qvel)
    assert rec1.moved == rec2.moved and rec1.settle_s == rec2.settle_s


@pytest.mark.parametrize("movement", ["none", "rotate_180"])
def test_the_rack_only_moves_when_the_instance_says(movement):
    instance = next(i for i in generate("extended", "same", 4, task_seed=1, layout_seed=0, policy_seed=0)
                    if i.movement == movement)
    model, data, record = _transition(instance, "")
    turned = abs(record.rack_after[3] - record.rack_before[3])
    assert (turned > 3.0) == (movement == "rotate_180")
    for name, label in instance.distractors.items():
        assert hole_under(data.body(name).xpos, GEOMETRY, instance.moved_rack_pose) == label


def test_the_rack_shows_its_facing_and_its_guides_hold_a_tube_upright_in_one_hole():
    instance = _turned_instance()
    model, data = _settled(instance)
    edges = [tuple(model.geom(f"rack_edge_{e}").rgba) for e in ("row_A", "row_C", "col_1", "col_4")]
    assert len(set(edges)) == 4  # asymmetric: every edge its own colour
    holes = hole_positions(GEOMETRY, instance.rack_pose)
    marker = data.geom("rack_a1_marker").xpos
    assert min(holes, key=lambda label: np.linalg.norm(holes[label][:2] - marker[:2])) == "A1"
    # A tube let go 3 mm off a free hole's centre and 1 cm up drops into that hole and stands.
    free = next(label for label in LABELS if label not in instance.distractors.values())
    joint = model.body(TARGET).jntadr[0]
    adr = model.jnt_qposadr[joint]
    start = np.array(seated_position(TARGET, free, instance.rack_pose)) + [0.003, 0.0, 0.010]
    data.qpos[adr:adr + 7] = [*start, 1.0, 0.0, 0.0, 0.0]
    data.qvel[:] = 0.0
    mujoco.mj_step(model, data, 750)
    assert hole_under(data.body(TARGET).xpos, GEOMETRY, instance.rack_pose) == free
    assert abs(data.body(TARGET).xpos[2] - seated_position(TARGET, free, instance.rack_pose)[2]) < 0.002
    assert data.body(TARGET).xmat[8] > 0.98  # upright within about 11 degrees


def test_the_scene_measures_the_grip_point_between_the_fingertips():
    instance = _turned_instance()
    scene = sim_scene(instance)
    assert scene.objects["tcp"] == "gripper" and scene.objects["rack"] == "rack"
    model, data = _settled(instance)
    tcp = data.body("tcp").xpos
    fingers = (data.body("panda_left_finger").xpos + data.body("panda_right_finger").xpos) / 2
    hand = data.body("panda_hand").xpos
    # On the hand's axis, beyond the finger bodies' origins (toward the fingertips).
    assert np.linalg.norm(np.cross(tcp - hand, fingers - hand)) < 1e-3 * np.linalg.norm(tcp - hand)
    assert np.linalg.norm(tcp - hand) > np.linalg.norm(fingers - hand)
    assert model.body("tcp").mass[0] == 0.0
