"""What each Oracle site may deliver for placement recall (paper 4.3, 6).

  state     where the target stands now, in the rack's own labels ("target_hole"),
            and the holes that hold a tube ("occupied_holes"): the seating
            predicate's shape on the measured tubes in the rack's measured frame, so
            a rack that turned while the cameras were blocked keeps its labels
  decision  one legal operation (the registered rule: the first Pick in canonical
            order, the retrieval; else the first legal one, the Wait before the
            occlusion or the placement's first free hole)
Neither carries coordinates, the legal set, the retrieval reference as the
evaluator keeps it, or what the environment did while the view was blocked
(contract.ORACLE_SITES.hidden_keys). The referee's scope check is every family's
(core/oracle_scope.py) with site_checks below.
"""
from __future__ import annotations

from labference_ros.core.operations import PICK
from labference_ros.tasks.placement_recall.contract import PlacementContract
from labference_ros.tasks.placement_recall.rack import LABELS
from labference_ros.tasks.placement_recall.recognisers import rack_pose, seated_holes


def state_payload(measurement, instance, contract: PlacementContract) -> dict:
    """The state site's payload from one measurement: the hole the target stands in
    (None: in none) and every hole holding a tube, by the rack's labels."""
    pose = rack_pose(measurement, instance.rack_pose)
    seated = seated_holes(measurement, pose, contract, instance.tubes)
    return {"target_hole": seated.get(contract.target), "occupied_holes": sorted(seated.values())}


def decision_rule(legal_set):
    ops = sorted(legal_set)
    picks = [o for o in ops if o.type == PICK]
    return (picks or ops or [None])[0]


def site_checks(contract: PlacementContract) -> dict:
    """What placement recall's state payload may say beyond its keys (core.oracle_scope)."""
    return {"state": _state_reasons}


def _state_reasons(payload: dict) -> list[str]:
    reasons = []
    hole = payload.get("target_hole")
    if hole is not None and hole not in LABELS:
        reasons.append("target_hole_invalid")
    occupied = payload.get("occupied_holes", [])
    if not isinstance(occupied, list) or not all(isinstance(h, str) and h in LABELS for h in occupied):
        reasons.append("occupied_holes_invalid")
    return reasons
