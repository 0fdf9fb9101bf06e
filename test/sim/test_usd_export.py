"""The cell as a USD stage (sim/usd_export.py): opened with pxr, its poses, masses,
friction and cameras equal the MuJoCo scene lab_sim runs for the same instance.

Tolerances: positions 1e-6 m, orientations 1e-6 (quaternion components, either sign),
masses 1e-7 relative, friction 1e-7, camera field of view 1e-4 degree and the image
aspect 1e-6 (USD's physics and camera schemas store float32: masses, friction, apertures, focal length)."""
from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from pxr import Usd, UsdGeom, UsdPhysics, UsdShade

from labference_ros.mujoco_cell.panda_model import CAMERA_MODEL_NAMES
from labference_ros.sim.mujoco_backend import MujocoBackend, RenderSettings
from labference_ros.sim.usd_export import DEFAULT_ROBOT_ASSET, LOAD_CELL_JOINT, export_usd
from labference_ros.tasks import family

POS_TOL = 1e-6
QUAT_TOL = 1e-6
FOVY_TOL_DEG = 1e-4  # float32 apertures: about 1e-5 degree of rounding


def world_pose(prim):
    matrix = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    q = matrix.ExtractRotationQuat()
    return np.array(matrix.ExtractTranslation()), np.array([q.GetReal(), *q.GetImaginary()])


def same_rotation(a, b) -> bool:
    return min(np.abs(a - b).max(), np.abs(a + b).max()) < QUAT_TOL


def friction_of(prim) -> float:
    material, _rel = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial("physics")
    return UsdPhysics.MaterialAPI(material.GetPrim()).GetStaticFrictionAttr().Get()


@pytest.fixture(scope="module")
def weighing(tmp_path_factory):
    fam = family("feedback_weighing")
    instance = fam.generate("basic", 1, task_seed=7, layout_seed=7, policy_seed=7)[0]
    path = str(tmp_path_factory.mktemp("usd") / "weighing.usda")
    summary = export_usd(fam, instance, path, image_size=(320, 240))
    backend = MujocoBackend(RenderSettings(width=320, height=240), fam.name)
    backend.load(instance)
    yield fam, instance, Usd.Stage.Open(path), backend, summary
    backend.close()


def test_the_stage_is_metres_kilograms_and_z_up(weighing):
    _fam, instance, stage, _backend, _summary = weighing
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert UsdPhysics.GetStageKilogramsPerUnit(stage) == 1.0
    assert stage.GetDefaultPrim().GetPath() == "/World"
    assert stage.GetDefaultPrim().GetCustomDataByKey("labference:instance_id") == instance.instance_id


def test_objects_have_the_scenes_poses_masses_friction_and_markers(weighing):
    fam, instance, stage, backend, summary = weighing
    m, d = backend.model, backend.data
    cell = fam.cell_description()
    assert set(summary["objects"]) == set(backend._objects) and "sample" in summary["objects"]
    for name in summary["objects"]:
        prim = stage.GetPrimAtPath(f"/World/{name}")
        assert prim.HasAPI(UsdPhysics.RigidBodyAPI)
        position, quat = world_pose(prim)
        body = m.body(name).id
        assert np.abs(position - d.xpos[body]).max() < POS_TOL, name
        assert same_rotation(quat, d.xquat[body]), name
        mass = UsdPhysics.MassAPI(prim).GetMassAttr().Get()
        assert mass == pytest.approx(m.body_mass[body], rel=1e-7), name
        (shape,) = [c for c in prim.GetChildren() if c.IsA(UsdGeom.Cylinder)]
        assert friction_of(shape) == pytest.approx(1.0, rel=1e-7)
        assert UsdGeom.Cylinder(shape).GetRadiusAttr().Get() == pytest.approx(cell.objects[name].radius)
        assert UsdGeom.Cylinder(shape).GetHeightAttr().Get() == pytest.approx(cell.objects[name].height)
        assert prim.GetAttribute("labference:marker_id").Get() == cell.objects[name].marker_id
    # The sample's mass is the instance's (an independent source: the task seed's draw).
    sample = stage.GetPrimAtPath("/World/sample")
    assert UsdPhysics.MassAPI(sample).GetMassAttr().Get() == pytest.approx(instance.sample_mass_g / 1000, rel=1e-7)


def test_the_pan_hangs_on_the_load_cell_joint_at_the_sensor_frame(weighing):
    _fam, _instance, stage, backend, _summary = weighing
    joint = UsdPhysics.FixedJoint(stage.GetPrimAtPath(f"/World/{LOAD_CELL_JOINT}"))
    assert joint.GetBody0Rel().GetTargets() == ["/World/balance_body"]
    assert joint.GetBody1Rel().GetTargets() == ["/World/pan"]
    site = backend.model.site("pan_load_cell").id
    for body_rel, local_pos in ((joint.GetBody0Rel(), joint.GetLocalPos0Attr()),
                                (joint.GetBody1Rel(), joint.GetLocalPos1Attr())):
        body = stage.GetPrimAtPath(body_rel.GetTargets()[0])
        matrix = UsdGeom.Xformable(body).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
        frame = np.array(matrix.Transform(local_pos.Get()))
        assert np.abs(frame - backend.data.site_xpos[site]).max() < POS_TOL
    assert tuple(joint.GetPrim().GetAttribute("labference:sensing_axis").Get()) == (0.0, 0.0, 1.0)
    fixture = stage.GetPrimAtPath("/World/balance_body")
    position, _quat = world_pose(fixture)
    assert np.abs(position - backend.data.xpos[backend.model.body("balance_body").id]).max() < POS_TOL


def test_cameras_have_the_scenes_poses_and_field_of_view_at_the_image_size(weighing):
    fam, _instance, stage, backend, summary = weighing
    m, d = backend.model, backend.data
    cell = fam.cell_description()
    assert set(summary["cameras"]) == {"front", "wrist", "display"}
    for name in summary["cameras"]:
        camera = UsdGeom.Camera(stage.GetPrimAtPath(f"/World/cameras/{name}"))
        focal = camera.GetFocalLengthAttr().Get()
        vertical = camera.GetVerticalApertureAttr().Get()
        horizontal = camera.GetHorizontalApertureAttr().Get()
        fovy = math.degrees(2 * math.atan(vertical / 2 / focal))
        assert fovy == pytest.approx(cell.cameras[name].fovy_deg, abs=FOVY_TOL_DEG), name
        assert horizontal / vertical == pytest.approx(320 / 240, rel=1e-6)
        assert tuple(camera.GetPrim().GetAttribute("labference:resolution").Get()) == (320, 240)
        cam_id = m.camera(CAMERA_MODEL_NAMES[name]).id
        position, quat = world_pose(camera.GetPrim())
        assert np.abs(position - d.cam_xpos[cam_id]).max() < POS_TOL, name
        want = np.zeros(4)
        mujoco.mju_mat2Quat(want, d.cam_xmat[cam_id])
        assert same_rotation(quat, want), name
    mount = stage.GetPrimAtPath("/World/cameras/wrist").GetAttribute("labference:mount").Get()
    assert mount.endswith("hand")


def test_the_robot_is_a_reference_at_its_base(weighing):
    _fam, _instance, stage, backend, _summary = weighing
    robot = stage.GetPrimAtPath("/World/robot")
    references = robot.GetMetadata("references")
    assert [r.assetPath for r in references.GetAddedOrExplicitItems()] == [DEFAULT_ROBOT_ASSET]
    position, _quat = world_pose(robot)
    assert np.abs(position - backend.data.xpos[backend.model.body("panda_link0").id]).max() < POS_TOL


def test_a_cell_without_a_balance_has_no_load_cell(tmp_path):
    fam = family("centrifuge_loading")
    instance = fam.generate(fam.conditions[0], 1, task_seed=1, layout_seed=1, policy_seed=1)[0]
    summary = export_usd(fam, instance, str(tmp_path / "centrifuge.usda"))
    stage = Usd.Stage.Open(str(tmp_path / "centrifuge.usda"))
    assert not summary["load_cell"] and not stage.GetPrimAtPath(f"/World/{LOAD_CELL_JOINT}")
    assert summary["objects"] and all(stage.GetPrimAtPath(f"/World/{n}").HasAPI(UsdPhysics.MassAPI)
                                      for n in summary["objects"])


def test_cell_export_writes_usd_and_urdf_and_refuses_bad_input_in_one_line(tmp_path):
    from click.testing import CliRunner

    from labference_ros.cli.main import main

    out = tmp_path / "cell.usda"
    res = CliRunner().invoke(main, ["cell", "export", "--format", "usd", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert res.output.startswith(f"wrote {out}: instance ") and "load cell yes" in res.output
    assert Usd.Stage.Open(str(out)).GetPrimAtPath("/World/load_cell")
    urdf = tmp_path / "cell.urdf"
    res = CliRunner().invoke(main, ["cell", "export", "--format", "urdf", "-o", str(urdf)])
    assert res.exit_code == 0 and "<robot" in urdf.read_text()
    bad = tmp_path / "bad.json"
    bad.write_text('{"bad": 1}')
    res = CliRunner().invoke(main, ["cell", "export", "--format", "usd", "--instance", str(bad), "-o", str(out)])
    assert res.exit_code == 2 and "is not a feedback_weighing instance" in res.output
    res = CliRunner().invoke(main, ["cell", "export", "--format", "urdf", "--task", "centrifuge_loading",
                                    "-o", str(urdf)])
    assert res.exit_code == 2 and "has none" in res.output


def test_cell_export_to_a_folder_that_is_missing_is_one_line_before_any_work(tmp_path):
    from click.testing import CliRunner

    from labference_ros.cli.main import main

    for fmt in ("usd", "urdf"):
        target = tmp_path / "no" / "such" / f"cell.{fmt}"
        res = CliRunner().invoke(main, ["cell", "export", "--format", fmt, "-o", str(target)])
        assert res.exit_code == 2, res.output
        assert "does not exist" in res.output and "Traceback" not in res.output and res.exception is not None
        assert not target.exists()
