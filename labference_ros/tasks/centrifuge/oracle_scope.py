"""What each Oracle site may deliver for centrifuge loading (paper 6, 8.1).

  state     the occupied slots as the rotor shows them now (the insertion
            predicate at this instant, by local slot label)
  decision  one legal operation (the registered rule: the first Insert in
            canonical order, else the first legal one)
  geometry  every slot's frame: its label, the socket mouth and the directed
            insertion axis in the world, from the measured rotor pose
  skill     a reference insertion of the chosen operation (the executor's side)
Nothing here delivers the legal set, the reference state or the intended slot.
The referee's scope check is every family's (core/oracle_scope.py) with
site_checks below: a state names slots by their labels.
"""
from __future__ import annotations

import math

from labference_ros.core.measurements import ObjectMeasurement
from labference_ros.core.operations import INSERT
from labference_ros.tasks.centrifuge.contract import CentrifugeContract
from labference_ros.tasks.centrifuge.insertion import seat_check
from labference_ros.tasks.centrifuge.rotor import RotorPose, slot_frames, slot_name

ROTOR_OBJECT = "rotor"  # the rotor as a measured object (kind "rotor"): its pose places the slots


def rotor_pose(rotor: ObjectMeasurement) -> RotorPose:
    """The rotor's measured pose: position, and yaw from its orientation (w, x, y, z)."""
    w, x, y, z = rotor.orientation
    yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return RotorPose(tuple(float(c) for c in rotor.position), yaw)


def occupied_slots(objects: dict, contract: CentrifugeContract) -> dict[str, str]:
    """tube -> slot label of every tube the insertion predicate finds seated now."""
    rotor = objects.get(ROTOR_OBJECT)
    if rotor is None:
        return {}
    frames = slot_frames(contract.rotor, rotor_pose(rotor))
    out = {}
    for name in contract.tubes:
        o = objects.get(name)
        if o is not None:
            check = seat_check(o, frames, contract)
            if check.seated:
                out[name] = slot_name(check.slot)
    return out


def state_payload(objects: dict, contract: CentrifugeContract) -> dict:
    return {"occupied_slots": sorted(occupied_slots(objects, contract).values())}


def site_checks(contract: CentrifugeContract) -> dict:
    """What the centrifuge's state payload may say beyond its keys (core.oracle_scope)."""
    return {"state": lambda payload: _state_reasons(payload, contract)}


def _state_reasons(payload: dict, contract: CentrifugeContract) -> list[str]:
    slots = payload.get("occupied_slots", [])
    known = {slot_name(j) for j in range(contract.rotor.n_slots)}
    if not isinstance(slots, list) or not all(isinstance(s, str) and s in known for s in slots):
        return ["occupied_slots_invalid"]
    return []


def decision_rule(legal_set):
    ops = sorted(legal_set)
    inserts = [o for o in ops if o.type == INSERT]
    return (inserts or ops or [None])[0]


def geometry_frames(objects: dict, contract: CentrifugeContract) -> list[dict]:
    rotor = objects.get(ROTOR_OBJECT)
    if rotor is None:
        return []
    return [{"slot": f.name, "mouth": [float(v) for v in f.mouth], "axis": [float(v) for v in f.axis]}
            for f in slot_frames(contract.rotor, rotor_pose(rotor))]
