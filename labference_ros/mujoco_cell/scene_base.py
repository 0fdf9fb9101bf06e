"""What every simulated cell shares, as a mujoco.MjSpec built from a cell description:
the physics options, the floor, the table, the ceiling light, the world-fixed cameras
asked for, and the Panda (with its wrist camera) at the origin. A task family's scene
(tasks/<family>/scene.py) adds its fixtures and objects to it."""
from __future__ import annotations

import mujoco

from labference_ros.cell.description import CellDescription
from labference_ros.mujoco_cell.panda_model import PANDA_PREFIX, camera_quat, panda_spec


def cell_spec(cell: CellDescription, model_name: str, cameras: tuple[str, ...] = ("front",)) -> mujoco.MjSpec:
    """The cell's common scene; `cameras`: the world-fixed cameras to place, in this order."""
    spec = mujoco.MjSpec()
    spec.modelname = model_name
    opt = spec.option
    opt.timestep = 0.002
    opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    # multiccd and nativeccd stay on (MuJoCo's defaults); sleeping stays off,
    # or a load cell freezes at its empty value.
    opt.disableflags = 0
    opt.enableflags = 0
    spec.compiler.fusestatic = False
    vis = spec.visual
    vis.quality.offsamples = 0
    vis.quality.shadowsize = 0
    vis.global_.offwidth = 640
    vis.global_.offheight = 480
    vis.headlight.ambient = [0.45, 0.45, 0.45]
    vis.headlight.diffuse = [0.5, 0.5, 0.5]

    world = spec.worldbody
    world.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[3, 3, 0.1],
                   pos=[0, 0, -0.75], rgba=[0.35, 0.36, 0.38, 1], contype=0, conaffinity=0)
    table = cell.table
    world.add_geom(name="table", type=mujoco.mjtGeom.mjGEOM_BOX, size=list(table.half_size),
                   pos=list(table.centre), rgba=list(table.rgba))
    world.add_light(name="ceiling", pos=[0.5, 0, 1.6], dir=[0, 0, -1], castshadow=False,
                    diffuse=[0.5, 0.5, 0.5])
    for name in cameras:
        mount = cell.cameras[name]
        if mount.parent != "world":
            raise ValueError(f"camera {name!r} is mounted on {mount.parent!r}, not fixed in the world")
        world.add_camera(name=name, pos=list(mount.position), quat=camera_quat(mount), fovy=mount.fovy_deg)

    frame = world.add_frame(pos=[0, 0, 0])
    frame.attach_body(panda_spec(simplified_visuals=True).worldbody.first_body(), PANDA_PREFIX, "")
    return spec
