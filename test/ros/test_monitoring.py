"""Monitoring without a running graph: the robot description (parsed by yourdfpy,
a maintained URDF library) against the simulator, its meshes in the installed
share directory, the pure marker logic, the static-frame merge of the recorder,
the monitor:=true switch and the RViz config."""
from __future__ import annotations

import io
import pathlib

import mujoco
import numpy as np
import pytest
import yaml
import yourdfpy

from labference_ros.cell.description import weighing_cell
from labference_ros.monitoring import description
from labference_ros.monitoring.kinematics import RobotKinematics
from labference_ros.monitoring.markers import LEGAL_GREEN, WRONG_RED, MonitorState, build_markers

REPO = pathlib.Path(__file__).resolve().parents[2]
CELL = REPO / "urdf" / description.CELL_URDF


@pytest.fixture(scope="module")
def urdf_xml() -> str:
    return description.compose(CELL)


@pytest.fixture(scope="module")
def sim():
    """A loaded weighing scene with the arm away from home."""
    from labference_ros.tasks.weighing.instances import generate
    from labference_ros.sim.mujoco_backend import MujocoBackend

    backend = MujocoBackend()
    instance = generate("basic", 1, task_seed=3, layout_seed=3, policy_seed=0)[0]
    backend.load(instance)
    q = (0.4, -0.3, 0.2, -2.0, 0.1, 1.9, 0.3)
    backend.data.qpos[backend._arm_qadr] = q
    backend.data.qpos[backend._finger_qadr] = 0.03
    mujoco.mj_forward(backend.model, backend.data)
    yield backend, instance
    backend.close()


def world_poses(urdf: yourdfpy.URDF, cfg: dict) -> dict[str, np.ndarray]:
    urdf.update_cfg({n: cfg.get(n, 0.0) for n in urdf.actuated_joint_names})
    return {link: urdf.get_transform(frame_to=link, frame_from="world") for link in urdf.link_map}


def test_description_parses_with_yourdfpy_and_drives_every_joint_state(urdf_xml):
    from labference_ros.sim.backend import ARM_JOINT_NAMES, FINGER_JOINT_NAMES

    urdf = yourdfpy.URDF.load(io.StringIO(urdf_xml), load_meshes=False)
    assert urdf.validate()
    assert set(urdf.actuated_joint_names) == set(ARM_JOINT_NAMES + FINGER_JOINT_NAMES)
    assert {"world", "table", "balance_body", "pan_load_cell", "panda_link0", "panda_hand"} <= set(urdf.link_map)


def test_meshes_resolve_in_the_installed_share_directory(urdf_xml):
    uris = description.mesh_uris(urdf_xml)
    assert len(uris) > 20 and all(u.startswith("package://labference/meshes/panda/") for u in uris)
    share = description.share_dir()
    assert share is not None, "labference is not installed (env/bootstrap.sh installs it into .venv)"
    missing = [u for u in uris if not description.resolve_uri(u, share).is_file()]
    assert not missing


def test_panda_urdf_is_generated_from_the_simulators_model():
    from labference_ros.sim.panda_urdf import OUT, panda_urdf

    assert OUT.read_text(encoding="utf-8") == panda_urdf(), "run: python -m labference_ros.sim.panda_urdf"


def test_robot_links_and_fixtures_equal_the_simulators_bodies_to_1mm(urdf_xml, sim):
    backend, instance = sim
    m, d = backend.model, backend.data
    urdf = yourdfpy.URDF.load(io.StringIO(urdf_xml), load_meshes=False)
    # The balance stands where this layout puts it (the URDF holds a nominal pose).
    bx, by = instance.layout["balance"]
    urdf.joint_map["table_to_balance"].origin[:3, 3] = (bx, by, 0.0)
    urdf = yourdfpy.URDF(robot=urdf.robot, load_meshes=False)
    js = backend.joint_state()
    poses = world_poses(urdf, dict(zip(js.names, js.position)))
    checked = 0
    for link, T in poses.items():
        if link == "pan_load_cell":  # a site on the pan body
            pos = d.site_xpos[m.site(link).id]
            rot = d.site_xmat[m.site(link).id].reshape(3, 3)
        elif mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, link) >= 0:
            pos, rot = d.xpos[m.body(link).id], d.xmat[m.body(link).id].reshape(3, 3)
        else:
            continue
        assert np.linalg.norm(T[:3, 3] - pos) < 1e-3, link
        assert np.allclose(T[:3, :3], rot, atol=1e-3), link
        checked += 1
    assert checked >= 13  # 11 Panda links, balance_body, pan_load_cell


def test_published_camera_frames_are_the_simulators_optical_frames(sim):
    from labference_ros.sim.frames import camera_frame_id, cell_frames

    backend, _instance = sim
    m, d = backend.model, backend.data
    frames = {f.child: f for f in cell_frames(m, d, weighing_cell())}
    front, optical = frames["front_camera"], frames[camera_frame_id("front")]
    assert front.parent == "world" and optical.parent == "front_camera"
    R_cam, R_opt = np.zeros(9), np.zeros(9)
    mujoco.mju_quat2Mat(R_cam, np.asarray(front.quaternion))
    mujoco.mju_quat2Mat(R_opt, np.asarray(optical.quaternion))
    R = R_cam.reshape(3, 3) @ R_opt.reshape(3, 3)  # the optical frame in the world
    cam = m.camera("front").id
    # Optical z (forward) is MuJoCo's -z; the position is the camera's.
    assert np.allclose(R[:, 2], -d.cam_xmat[cam].reshape(3, 3)[:, 2], atol=1e-6)
    assert np.allclose(front.translation, d.cam_xpos[cam], atol=1e-6)
    assert np.allclose(optical.translation, 0.0)
    assert frames["wrist_camera"].parent == "panda_hand"
    assert frames["display_camera"].parent == "balance_display"
    assert frames["pan_load_cell"].parent == "balance_body"


def test_the_marker_camera_has_the_same_frame_whether_the_scene_renders_it_or_not(sim, urdf_xml):
    """The cell's overhead camera is on /tf_static in every scene (the URDF has it), at the pose the
    rehearsal scene renders from."""
    from labference_ros.sim.frames import camera_frame_id, cell_frames
    from labference_ros.sim.mujoco_backend import MujocoBackend, RenderSettings

    backend, instance = sim
    plain = {f.child: f for f in cell_frames(backend.model, backend.data, weighing_cell())}
    assert mujoco.mj_name2id(backend.model, mujoco.mjtObj.mjOBJ_CAMERA, "overhead") < 0
    rehearsal = MujocoBackend(RenderSettings(fiducials=True))
    try:
        rehearsal.load(instance)
        rendered = {f.child: f for f in cell_frames(rehearsal.model, rehearsal.data, weighing_cell())}
    finally:
        rehearsal.close()
    for child in ("overhead_camera", camera_frame_id("overhead")):
        assert plain[child].parent == rendered[child].parent
        assert np.allclose(plain[child].translation, rendered[child].translation, atol=1e-6), child
        assert np.allclose(plain[child].quaternion, rendered[child].quaternion, atol=1e-6), child
    # ... and where the robot description puts it.
    urdf = yourdfpy.URDF.load(io.StringIO(urdf_xml), load_meshes=False)
    T = urdf.get_transform(frame_to="overhead_camera", frame_from="world")
    R = np.zeros(9)
    mujoco.mju_quat2Mat(R, np.asarray(plain["overhead_camera"].quaternion))
    assert np.allclose(T[:3, 3], plain["overhead_camera"].translation, atol=1e-6)
    assert np.allclose(T[:3, :3], R.reshape(3, 3), atol=1e-6)


def test_kinematics_matches_yourdfpys_scene_graph(urdf_xml):
    kin = RobotKinematics(urdf_xml, description.ROBOT_ROOT)
    cfg = {"panda_joint2": 0.5, "panda_joint4": -1.8, "panda_finger_joint1": 0.02}
    urdf = yourdfpy.URDF.load(io.StringIO(urdf_xml), load_meshes=False)
    urdf.update_cfg({n: cfg.get(n, 0.0) for n in urdf.actuated_joint_names})
    for joint in kin.moving:
        ref = urdf.get_transform(frame_to=joint.child, frame_from=joint.parent)
        assert np.allclose(kin.joint_transform(joint, cfg.get(joint.name, 0.0)), ref)
    assert {t.child for t in kin.static_transforms()} == {"panda_link0", "panda_hand"}


def test_a_cell_urdf_that_already_has_the_panda_is_published_unchanged(tmp_path, urdf_xml):
    whole = tmp_path / "cell.urdf"
    whole.write_text(urdf_xml)
    assert description.link_names(description.compose(whole)) == description.link_names(urdf_xml)


# markers ----------------------------------------------------------------------------
def _state() -> MonitorState:
    s = MonitorState()
    s.new_episode("ep1")
    s.on_objects({n: {"kind": "standard", "position": (0.4, i * 0.1, 0.0)}
                  for i, n in enumerate(("std_10", "std_20", "std_50"))})
    s.on_opportunity({"id": 2, "trigger": "confirmed_change"})
    s.on_legal_set(2, [{"type": "add", "object": "std_20", "destination": "pan"}])
    return s


def _by_ns(markers, ns):
    return [m for m in markers if m.ns == ns]


def test_legal_set_highlighted_then_the_wrong_first_choice_in_red():
    s = _state()
    s.on_opportunity({"id": 3, "trigger": "confirmed_change"})
    markers = build_markers(s)
    assert not _by_ns(markers, "legal")  # the next opportunity's legal set has not arrived yet
    assert _by_ns(markers, "opportunity")[0].text.endswith("legal pending")
    s.on_legal_set(3, [{"type": "add", "object": "std_20", "destination": "pan"}])
    markers = build_markers(s)
    assert [m.text for m in _by_ns(markers, "legal")] == ["std_20"]
    colours = {lab.text: obj.colour[:3] for lab, obj in zip(_by_ns(markers, "labels"), _by_ns(markers, "objects"))}
    assert colours["std_20"] == LEGAL_GREEN[:3] and colours["std_10"] != LEGAL_GREEN[:3]
    assert "opportunity #3" in _by_ns(markers, "opportunity")[0].text
    s.on_event({"category": "choice", "object": "std_50", "opportunity_id": 3, "t": 3.0,
                "operation": {"type": "add", "object": "std_50", "destination": "pan"},
                "detail": {"scored": True, "correct": False}})
    markers = build_markers(s)
    colours = {lab.text: obj.colour[:3] for lab, obj in zip(_by_ns(markers, "labels"), _by_ns(markers, "objects"))}
    assert colours["std_50"] == WRONG_RED[:3]
    assert "WRONG" in _by_ns(markers, "choice")[0].text


def test_closed_opportunity_and_new_episode_clear_the_state():
    s = _state()
    s.on_reading({"displayed_g": 20.0, "stable": True, "valid": True})
    s.on_event({"category": "task_complete", "object": "", "t": 9.0})
    assert "20.0 g  stable" in _by_ns(build_markers(s), "balance")[0].text
    assert "task_complete" in _by_ns(build_markers(s), "events")[0].text
    s.on_event({"category": "opportunity_closed", "opportunity_id": 2, "t": 9.5})
    assert _by_ns(build_markers(s), "opportunity")[0].text == "no open opportunity"
    assert not _by_ns(build_markers(s), "legal")
    s.on_objects({"std_10": {"kind": "standard", "position": (0.4, 0.1, 0.8)}})
    s.on_opportunity({"id": 3, "trigger": "start"})
    s.on_legal_set(3, [{"type": "add", "object": "std_10"}])
    assert s.new_episode("ep2") and not s.events and s.reading is None and s.opportunity is None
    assert not s.new_episode("ep2")
    # The new episode's first legal set may come before its first world state: the last
    # measured poses still place its markers.
    s.on_opportunity({"id": 1, "trigger": "start"})
    s.on_legal_set(1, [{"type": "add", "object": "std_10"}])
    assert [m.text for m in _by_ns(build_markers(s), "legal")] == ["std_10"]


# recorder, launch, rviz -------------------------------------------------------------
def test_recorder_merges_static_frames_of_several_publishers():
    from geometry_msgs.msg import TransformStamped
    from rclpy.serialization import deserialize_message, serialize_message
    from tf2_msgs.msg import TFMessage

    from labference_ros.nodes.recorder import merge_static_transforms

    def msg(*children):
        return serialize_message(TFMessage(transforms=[TransformStamped(child_frame_id=c) for c in children]))

    merged = merge_static_transforms(merge_static_transforms(None, msg("table", "front_camera")),
                                     msg("panda_link0", "table"))
    assert sorted(t.child_frame_id for t in deserialize_message(merged, TFMessage).transforms) == [
        "front_camera", "panda_link0", "table"]


def test_monitor_starts_only_with_monitor_true():
    from labference_ros.graphs.weighing_sim import GRAPH
    from labference_ros.launcher.arguments import parse_launch_arguments
    from labference_ros.launcher.plan import node_processes

    default = {p.name for p in node_processes(GRAPH, parse_launch_arguments(GRAPH, []))}
    on = {p.name for p in node_processes(GRAPH, parse_launch_arguments(GRAPH, ["monitor:=true"]))}
    assert "monitor" not in default and on == default | {"monitor"}
    launch = (REPO / "launch" / GRAPH.launch_file).read_text()
    assert "condition=IfCondition(LaunchConfiguration('monitor'))" in launch


def test_rviz_config_shows_robot_tf_markers_and_the_three_cameras():
    config = yaml.safe_load((REPO / "rviz" / "weighing.rviz").read_text())
    manager = config["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == "world"
    displays = {d["Class"]: d for d in manager["Displays"]}
    assert displays["rviz_default_plugins/RobotModel"]["Description Topic"]["Value"] == "/robot_description"
    assert "rviz_default_plugins/TF" in displays
    assert displays["rviz_default_plugins/MarkerArray"]["Topic"]["Value"] == "/referee/markers"
    images = {d["Topic"]["Value"] for d in manager["Displays"] if d["Class"] == "rviz_default_plugins/Image"}
    assert images == {f"/cameras/{c}/image_raw" for c in ("front", "wrist", "display")}
    assert "install(DIRECTORY launch rviz" in (REPO / "CMakeLists.txt").read_text()
