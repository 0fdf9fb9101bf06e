"""The centrifuge family's move on the motion skills: a tube standing on the table
picked top-down and inserted bottom first along its slot's axis, released 15 mm
into the bore (the bore holds it upright while it slides on to the seat)."""
from __future__ import annotations

from labference_ros.skills.motion import MotionPlan, PickPlacePlanner
from labference_ros.tasks.centrifuge.contract import contract_for
from labference_ros.tasks.centrifuge.instances import CentrifugeInstance
from labference_ros.tasks.centrifuge.rotor import slot_frames

RELEASE_DEPTH_M = 0.015  # the tube's bottom this far into the bore when the fingers open
CLEARANCE_M = 0.06  # a carried tube's bottom stays this far above the mouths
OPEN_WIDTH_M = 0.05  # the fingers open this wide around a tube (wider than any grasp command)


def plan_insert(planner: PickPlacePlanner, arm_q, instance: CentrifugeInstance, tube_xyz, slot: int,
                open_width: float = OPEN_WIDTH_M) -> MotionPlan:
    contract = contract_for(instance.condition)
    frame = slot_frames(contract.rotor, instance.rotor_pose)[slot]
    return planner.plan_pick_insert(arm_q, tube_xyz, contract.tube.radius_m, contract.tube.length_m, frame.mouth,
                                    frame.axis, clear_z=float(frame.mouth[2]) + CLEARANCE_M,
                                    release_depth=RELEASE_DEPTH_M, open_width=open_width)
