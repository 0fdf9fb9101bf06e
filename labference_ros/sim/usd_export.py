"""The cell of one instance as a USD stage (usd-core's pxr), for simulators that load USD.

Written from the scene lab_sim simulates, loaded and settled as at an episode's start
(t = 0), so that poses, masses, friction and cameras are the ones the MuJoCo episode
has. World frame: metres, kilograms, Z up (the MuJoCo world frame itself).

- /World/robot: an Xform at the robot base (panda_link0) that references the robot's
  own USD asset (``robot_asset``; Isaac Sim's Franka by default) instead of
  duplicating it; its home joint positions and joint names are attributes.
- /World/table and the fixtures (balance housing, display panel, pan): static
  colliders; the pan hangs on the balance housing by a fixed joint named
  ``load_cell`` at the load-cell frame: its reaction is what a simulator publishes as
  the ``/balance/wrench`` (the sensing axis, +z of the joint frame, opposes gravity).
- /World/<object>: rigid bodies with their MuJoCo mass, centre of mass and diagonal
  inertia; collision shapes (cylinders, boxes, spheres) bound to a physics material
  with the geom's sliding friction; the ArUco marker id and side where the cell
  prints one (``labference:marker_id``, ``labference:marker_side_m``).
- /World/cameras/<name>: the cameras at their world poses at t = 0, with the focal
  length and apertures that give the MuJoCo vertical field of view at the rendered
  image size (``labference:resolution``), and the body they are mounted on
  (``labference:mount``: the wrist camera rides on the hand).

Visual-only geometry (the display's segments, labels) is left out: a USD simulator
draws its own. A geom's ``labference:`` attributes keep the MuJoCo names."""
from __future__ import annotations

import math

import mujoco
import numpy as np

from labference_ros.mujoco_cell.panda_model import CAMERA_MODEL_NAMES, PANDA_PREFIX
from labference_ros.sim.mujoco_backend import MujocoBackend, RenderSettings

# Isaac Sim's Franka asset, relative to its assets root (Isaac Sim 5/6 layout).
DEFAULT_ROBOT_ASSET = "Isaac/Robots/FrankaRobotics/FrankaPanda/franka.usd"
FOCAL_LENGTH_MM = 24.0  # any focal length will do: the apertures are scaled to keep the field of view
LOAD_CELL_JOINT = "load_cell"


def _prim_name(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def camera_apertures(fovy_deg: float, width: int, height: int, focal_mm: float = FOCAL_LENGTH_MM):
    """(horizontal, vertical) aperture in mm for a pinhole camera of this vertical field
    of view at this image size (square pixels)."""
    vertical = 2.0 * focal_mm * math.tan(math.radians(fovy_deg) / 2.0)
    return vertical * width / height, vertical


def _pose_ops(xform, position, quat_wxyz) -> None:
    from pxr import Gf, UsdGeom

    api = UsdGeom.Xformable(xform)
    api.ClearXformOpOrder()
    api.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*map(float, position)))
    w, x, y, z = (float(v) for v in quat_wxyz)
    api.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(w, Gf.Vec3d(x, y, z)))


def _body_world_pose(d, body_id: int):
    return d.xpos[body_id].copy(), d.xquat[body_id].copy()


def _geom_local_pose(m, geom_id: int):
    return m.geom_pos[geom_id].copy(), m.geom_quat[geom_id].copy()


def _collides(m, geom_id: int) -> bool:
    return bool(m.geom_contype[geom_id] or m.geom_conaffinity[geom_id])


def _add_shape(stage, parent_path: str, m, geom_id: int, materials: dict):
    """One collision geom as a USD gprim under parent_path; None for shapes not exported."""
    from pxr import Gf, Sdf, UsdGeom, UsdPhysics, UsdShade

    kind = m.geom_type[geom_id]
    name = _prim_name(m.geom(geom_id).name or f"geom_{geom_id}")
    path = f"{parent_path}/{name}"
    size = m.geom_size[geom_id]
    if kind == mujoco.mjtGeom.mjGEOM_CYLINDER:
        prim = UsdGeom.Cylinder.Define(stage, path)
        prim.CreateRadiusAttr(float(size[0]))
        prim.CreateHeightAttr(float(2.0 * size[1]))
        prim.CreateAxisAttr("Z")
    elif kind == mujoco.mjtGeom.mjGEOM_BOX:
        prim = UsdGeom.Cube.Define(stage, path)
        prim.CreateSizeAttr(2.0)
    elif kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        prim = UsdGeom.Sphere.Define(stage, path)
        prim.CreateRadiusAttr(float(size[0]))
    else:
        return None
    pos, quat = _geom_local_pose(m, geom_id)
    _pose_ops(prim.GetPrim(), pos, quat)
    if kind == mujoco.mjtGeom.mjGEOM_BOX:
        UsdGeom.Xformable(prim).AddScaleOp().Set(Gf.Vec3f(*map(float, size)))
    rgba = m.geom_rgba[geom_id]
    prim.CreateDisplayColorAttr([Gf.Vec3f(*map(float, rgba[:3]))])
    UsdPhysics.CollisionAPI.Apply(prim.GetPrim())
    friction = round(float(m.geom_friction[geom_id][0]), 9)
    if friction not in materials:
        material_path = f"/World/physics_materials/friction_{len(materials)}"
        material = UsdShade.Material.Define(stage, material_path)
        physics = UsdPhysics.MaterialAPI.Apply(material.GetPrim())
        physics.CreateStaticFrictionAttr(friction)
        physics.CreateDynamicFrictionAttr(friction)
        physics.CreateRestitutionAttr(0.0)
        materials[friction] = material
    UsdShade.MaterialBindingAPI.Apply(prim.GetPrim()).Bind(
        materials[friction], UsdShade.Tokens.weakerThanDescendants, "physics")
    prim.GetPrim().CreateAttribute("labference:mujoco_geom", Sdf.ValueTypeNames.String).Set(m.geom(geom_id).name)
    return prim


def export_usd(family, instance, path: str, robot_asset: str = DEFAULT_ROBOT_ASSET,
               image_size: tuple[int, int] = (128, 128)) -> dict:
    """Write the stage of ``instance`` (a ``family`` instance) to ``path``; a summary of what it holds.
    image_size: (width, height) of the rendered images the cameras' apertures are made for."""
    from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

    width, height = image_size
    backend = MujocoBackend(RenderSettings(width=width, height=height), family.name)
    backend.load(instance)
    try:
        m, d = backend.model, backend.data
        scene = family.build_scene(instance, fiducials=False)
        cell = family.cell_description()
        stage = Usd.Stage.CreateNew(path)
        UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
        UsdGeom.SetStageMetersPerUnit(stage, 1.0)
        UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
        world = UsdGeom.Xform.Define(stage, "/World")
        stage.SetDefaultPrim(world.GetPrim())
        world.GetPrim().SetCustomDataByKey("labference:task", family.name)
        world.GetPrim().SetCustomDataByKey("labference:instance_id", instance.instance_id)
        scene_prim = UsdPhysics.Scene.Define(stage, "/World/physics_scene")
        gravity = np.asarray(m.opt.gravity, float)
        scene_prim.CreateGravityDirectionAttr(Gf.Vec3f(*map(float, gravity / np.linalg.norm(gravity))))
        scene_prim.CreateGravityMagnitudeAttr(float(np.linalg.norm(gravity)))
        scene_prim.GetPrim().CreateAttribute("labference:timestep_s", Sdf.ValueTypeNames.Double).Set(
            float(m.opt.timestep))
        materials: dict = {}

        # The robot: its own asset, referenced at the base.
        robot = UsdGeom.Xform.Define(stage, "/World/robot")
        base = m.body(f"{PANDA_PREFIX}link0").id
        _pose_ops(robot.GetPrim(), *_body_world_pose(d, base))
        robot.GetPrim().CreateAttribute("labference:model", Sdf.ValueTypeNames.String).Set(cell.robot.model)
        robot.GetPrim().CreateAttribute("labference:arm_joints", Sdf.ValueTypeNames.StringArray).Set(
            list(cell.robot.arm_joints))
        robot.GetPrim().CreateAttribute("labference:home", Sdf.ValueTypeNames.DoubleArray).Set(
            [float(q) for q in cell.robot.home])

        # The table: the world body's collision geoms (not the floor plane).
        UsdGeom.Xform.Define(stage, "/World/table")
        for g in range(m.ngeom):
            if m.geom_bodyid[g] == 0 and _collides(m, g) and m.geom_type[g] != mujoco.mjtGeom.mjGEOM_PLANE:
                _add_shape(stage, "/World/table", m, g, materials)

        objects = {}
        for name in [*scene.fixtures, *scene.objects]:
            body = m.body(name).id
            path_b = f"/World/{_prim_name(name)}"
            xform = UsdGeom.Xform.Define(stage, path_b)
            _pose_ops(xform.GetPrim(), *_body_world_pose(d, body))
            xform.GetPrim().CreateAttribute("labference:mujoco_body", Sdf.ValueTypeNames.String).Set(name)
            for g in range(m.ngeom):
                if m.geom_bodyid[g] == body and _collides(m, g):
                    _add_shape(stage, path_b, m, g, materials)
            if name in scene.objects:
                objects[name] = _make_rigid(xform.GetPrim(), m, body, free=m.body_jntnum[body] > 0)
                shape = cell.objects.get(name) or cell.objects.get(scene.objects[name])
                if shape is not None and shape.marker_id is not None:
                    xform.GetPrim().CreateAttribute("labference:marker_id", Sdf.ValueTypeNames.Int).Set(
                        int(shape.marker_id))
                    xform.GetPrim().CreateAttribute("labference:marker_side_m", Sdf.ValueTypeNames.Double).Set(
                        float(shape.label_side))
        # Fixtures nested in MuJoCo (the display panel in the housing) sit at world poses here,
        # each its own prim; the load cell holds the pan on the housing.
        if scene.load_cell_site:
            _add_load_cell(stage, m, d, scene.load_cell_site)

        cameras = {}
        UsdGeom.Scope.Define(stage, "/World/cameras")
        for cam_name in backend.cameras:
            model_name = CAMERA_MODEL_NAMES.get(cam_name, cam_name)
            cam_id = m.camera(model_name).id
            camera = UsdGeom.Camera.Define(stage, f"/World/cameras/{_prim_name(cam_name)}")
            quat = np.zeros(4)
            mujoco.mju_mat2Quat(quat, d.cam_xmat[cam_id])
            _pose_ops(camera.GetPrim(), d.cam_xpos[cam_id], quat)
            w_px, h_px = backend.render_settings.size(cam_name)[::-1]
            horizontal, vertical = camera_apertures(float(m.cam_fovy[cam_id]), w_px, h_px)
            camera.CreateFocalLengthAttr(FOCAL_LENGTH_MM)
            camera.CreateHorizontalApertureAttr(horizontal)
            camera.CreateVerticalApertureAttr(vertical)
            camera.CreateClippingRangeAttr(Gf.Vec2f(0.01, 100.0))
            camera.GetPrim().CreateAttribute("labference:resolution", Sdf.ValueTypeNames.Int2).Set(
                Gf.Vec2i(w_px, h_px))
            mount = m.body(m.cam_bodyid[cam_id]).name
            camera.GetPrim().CreateAttribute("labference:mount", Sdf.ValueTypeNames.String).Set(
                "world" if m.cam_bodyid[cam_id] == 0 else mount)
            cameras[cam_name] = {"fovy_deg": float(m.cam_fovy[cam_id]), "resolution": [w_px, h_px]}
        stage.GetRootLayer().Save()
        del stage
        _reference_robot(path, robot_asset)
        return {"path": path, "objects": objects, "cameras": cameras, "fixtures": list(scene.fixtures),
                "load_cell": bool(scene.load_cell_site)}
    finally:
        backend.close()


def _reference_robot(path: str, robot_asset: str) -> None:
    """The robot's asset as a reference of /World/robot, authored on the saved layer alone: a
    stage would try to open the asset (absent here) and warn."""
    from pxr import Sdf

    layer = Sdf.Layer.FindOrOpen(path)
    layer.GetPrimAtPath("/World/robot").referenceList.Prepend(Sdf.Reference(robot_asset))
    layer.Save()


def _make_rigid(prim, m, body: int, free: bool) -> dict:
    from pxr import Gf, UsdPhysics

    rigid = UsdPhysics.RigidBodyAPI.Apply(prim)
    if not free:
        rigid.CreateKinematicEnabledAttr(True)  # a fixed measured body (the centrifuge rotor)
    mass = UsdPhysics.MassAPI.Apply(prim)
    mass.CreateMassAttr(float(m.body_mass[body]))
    mass.CreateCenterOfMassAttr(Gf.Vec3f(*map(float, m.body_ipos[body])))
    mass.CreateDiagonalInertiaAttr(Gf.Vec3f(*map(float, m.body_inertia[body])))
    mass.CreatePrincipalAxesAttr(Gf.Quatf(*map(float, m.body_iquat[body][:1]),
                                          Gf.Vec3f(*map(float, m.body_iquat[body][1:]))))
    return {"mass_kg": float(m.body_mass[body]), "free": bool(free)}


def _add_load_cell(stage, m, d, site_name: str) -> None:
    """The pan as a rigid body on the balance housing, by a fixed joint at the load-cell frame."""
    from pxr import Gf, Sdf, UsdPhysics

    site = m.site(site_name).id
    pan_body = m.site_bodyid[site]
    pan_path = f"/World/{_prim_name(m.body(pan_body).name)}"
    pan = stage.GetPrimAtPath(pan_path)
    rigid = UsdPhysics.RigidBodyAPI.Apply(pan)
    rigid.CreateKinematicEnabledAttr(False)
    UsdPhysics.MassAPI.Apply(pan).CreateMassAttr(float(max(m.body_mass[pan_body], 1e-3)))
    joint = UsdPhysics.FixedJoint.Define(stage, f"/World/{LOAD_CELL_JOINT}")
    joint.CreateBody0Rel().SetTargets([Sdf.Path("/World/balance_body")])
    joint.CreateBody1Rel().SetTargets([Sdf.Path(pan_path)])
    # Joint frame = the load-cell site: local poses in each body.
    housing = m.body("balance_body").id
    site_pos, site_mat = d.site_xpos[site], d.site_xmat[site].reshape(3, 3)
    for body, set_pos, set_rot in ((housing, joint.CreateLocalPos0Attr, joint.CreateLocalRot0Attr),
                                   (pan_body, joint.CreateLocalPos1Attr, joint.CreateLocalRot1Attr)):
        body_mat = d.xmat[body].reshape(3, 3)
        local_pos = body_mat.T @ (site_pos - d.xpos[body])
        local_quat = np.zeros(4)
        mujoco.mju_mat2Quat(local_quat, (body_mat.T @ site_mat).ravel())
        set_pos(Gf.Vec3f(*map(float, local_pos)))
        set_rot(Gf.Quatf(float(local_quat[0]), Gf.Vec3f(*map(float, local_quat[1:]))))
    joint.GetPrim().CreateAttribute("labference:sensing_axis", Sdf.ValueTypeNames.Float3).Set(Gf.Vec3f(0, 0, 1))
    joint.GetPrim().CreateAttribute("labference:wrench_topic", Sdf.ValueTypeNames.String).Set("/balance/wrench")
    joint.GetPrim().CreateAttribute("labference:frame_id", Sdf.ValueTypeNames.String).Set(site_name)
