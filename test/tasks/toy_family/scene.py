"""The toy scene (simulator only): the common cell (robot, table, front camera), two flat pads
and the puck, a free cylinder standing between them."""
from __future__ import annotations

import mujoco

from labference_ros.cell.description import common_cell
from labference_ros.mujoco_cell.scene_base import cell_spec
from labference_ros.tasks.base import SimScene
from toy_family.contract import PUCK, contract_for


def sim_scene(instance, fiducials: bool = False) -> SimScene:
    if fiducials:
        raise ValueError("the toy family has no marker scene")
    contract = contract_for(instance.condition)
    cell = common_cell()
    spec = cell_spec(cell, "toy_shuttle", ("front",))
    top = cell.table.top_z
    colours = {"left": [0.2, 0.6, 0.9, 1.0], "right": [0.9, 0.8, 0.2, 1.0]}
    for pad, (x, y) in contract.pads.items():
        spec.worldbody.add_geom(name=f"pad_{pad}", type=mujoco.mjtGeom.mjGEOM_BOX,
                                size=[contract.pad_half_m, contract.pad_half_m, 0.0005], pos=[x, y, top + 0.0005],
                                rgba=colours[pad], contype=0, conaffinity=0)
    r, h = contract.puck_radius_m, contract.puck_height_m
    body = spec.worldbody.add_body(name=PUCK, pos=[*contract.puck_start, top + h / 2])
    body.add_freejoint(name=f"{PUCK}_free")
    body.add_geom(name=PUCK, type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[r, h / 2], mass=contract.puck_mass_kg,
                  rgba=[0.9, 0.35, 0.1, 1.0], condim=4, priority=1, friction=[1.0, 0.005, 0.0001])
    return SimScene(spec=spec, objects={PUCK: "puck"}, cameras=("front", "wrist"))
