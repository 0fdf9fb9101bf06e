"""The centrifuge family's move on the motion skills: a tube standing on the table
picked top-down and inserted bottom first along its slot's axis, released 15 mm
into the bore (the bore holds it upright while it slides on to the seat)."""
from __future__ import annotations

from labference_ros.skills.motion import TUBE_OPEN_WIDTH_M, MotionPlan, PickPlacePlanner
from labference_ros.tasks.centrifuge.contract import contract_for
from labference_ros.tasks.centrifuge.instances import CentrifugeInstance
from labference_ros.tasks.centrifuge.rotor import slot_frames

RELEASE_DEPTH_M = 0.015  # the tube's bottom this far into the bore when the fingers open
CLEARANCE_M = 0.06  # a carried tube's bottom stays this far above the mouths
OPEN_WIDTH_M = TUBE_OPEN_WIDTH_M


def plan_insert_at(planner: PickPlacePlanner, arm_q, tube_xyz, mouth, axis,
                   open_width: float = OPEN_WIDTH_M, tube=None, **variation) -> MotionPlan:
    """The standing tube at tube_xyz into the socket with this mouth and axis (into it).
    tube: its TubeGeometry (default: the default tubes, as a system not told a held-out
    binding assumes). variation: plan_pick_insert's `detour`, `abandon_at`, `abandon_axis`
    (the imperfect systems)."""
    tube = tube or contract_for("basic").tube
    return planner.plan_pick_insert(arm_q, tube_xyz, tube.radius_m, tube.length_m, mouth, axis,
                                    clear_z=float(mouth[2]) + CLEARANCE_M, release_depth=RELEASE_DEPTH_M,
                                    open_width=open_width, **variation)


def plan_insert(planner: PickPlacePlanner, arm_q, instance: CentrifugeInstance, tube_xyz, slot: int,
                open_width: float = OPEN_WIDTH_M, detour_slot: int | None = None, abandon_at=None,
                abandon_axis=None) -> MotionPlan:
    """The standing tube at tube_xyz into the instance's slot (its calibrated frame at the rotor's pose);
    detour_slot: a socket approached first; abandon_at: where the tube is let go instead (along
    abandon_axis, bottom first; upright without it)."""
    contract = contract_for(instance.condition)  # its tube: the instance's binding's
    frames = slot_frames(contract.rotor, instance.rotor_pose)
    frame = frames[slot]
    detour = None if detour_slot is None else (frames[detour_slot].mouth, frames[detour_slot].axis)
    return plan_insert_at(planner, arm_q, tube_xyz, frame.mouth, frame.axis, open_width, tube=contract.tube,
                          detour=detour, abandon_at=abandon_at, abandon_axis=abandon_axis)
