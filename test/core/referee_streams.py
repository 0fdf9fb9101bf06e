"""Shared builders for the referee core tests (synthetic streams only)."""
from __future__ import annotations

from labference_ros.tasks.weighing.contract import contract_for
from labference_ros.tasks.weighing.instance import WeighingInstance
from labference_ros.tasks.weighing.referee import Referee
from labference_ros.tasks.weighing.synthetic_world import SyntheticWorld


def instance(target=180.0, sample=130.0, goal=("std_50",), start=(), condition="basic", iid="i0"):
    return WeighingInstance(iid, condition, 1, 2, 3, float(target), float(sample), tuple(start), tuple(goal))


def episode(inst=None, observe_every_s=0.1, **world_kw):
    inst = inst or instance()
    ref = Referee(contract_for(inst.condition), inst, episode_id="ep")
    world = SyntheticWorld(inst, ref, observe_every_s=observe_every_s, **world_kw)
    return ref, world


def ops(ref_or_ops):
    seq = ref_or_ops.legal_set() if hasattr(ref_or_ops, "legal_set") else ref_or_ops
    return sorted(str(o) for o in seq)
