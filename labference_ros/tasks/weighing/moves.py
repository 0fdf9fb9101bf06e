"""The weighing family's pick-and-place moves on the motion skills: a standard
goes to its own pan slot (the sample to the pan centre) or to a table spot."""
from __future__ import annotations

from labference_ros.cell.description import weighing_cell
from labference_ros.skills.motion import MotionPlan, PickPlacePlanner
from labference_ros.tasks.weighing.layout import BALANCE, pan_slot


def plan_to_pan(planner: PickPlacePlanner, arm_q, object_name: str, object_xyz,
                balance_xy, binding: str | None = None) -> MotionPlan:
    """Standards go to their own pan slot; the sample to the pan centre. binding: the
    cell's object binding the object belongs to (its grasp height and width; None: the
    default objects)."""
    dest = pan_slot(object_name, balance_xy) if object_name.startswith("std_") else balance_xy
    return planner.plan_pick_place(arm_q, _shape(object_name, binding), object_xyz, dest, BALANCE.pan_top_z)


def plan_to_table(planner: PickPlacePlanner, arm_q, object_name: str, object_xyz,
                  table_xy, binding: str | None = None) -> MotionPlan:
    return planner.plan_pick_place(arm_q, _shape(object_name, binding), object_xyz, table_xy, 0.0)


def _shape(object_name: str, binding: str | None):
    return weighing_cell().bound(binding).objects[object_name]
