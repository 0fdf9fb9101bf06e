"""The simulated environment's own part of a placement-recall episode (paper 8.3):
when the target stands confirmed in a hole and the robot has withdrawn, the
cameras are occluded and the occluded transition (transition.py, eq. 10) runs.

lab_sim asks this object at every camera tick. The transition runs between two
measurements and takes no sim time from the graph's point of view (the physics it
needs to settle is stepped, then the clock is set back and the robot restored to
where it stood), so policy actions and recognition pause for it: no measurement,
observation or command falls inside it. The measurement published right after it
carries the transition's record (WorldMeasurement.environment), which is how the
referee, and the replay audit reading the bag, learn of it. The cameras deliver
blanked frames from the transition for OCCLUDED_S of sim time (the occluder,
OCCLUSION, is declared in run.json's `observation.environment`), then fresh images.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from labference_ros.core.measurements import LEFT_FINGER, RIGHT_FINGER, WorldMeasurement
from labference_ros.tasks.placement_recall.contract import TCP_OBJECT, PlacementContract
from labference_ros.tasks.placement_recall.instances import PlacementInstance
from labference_ros.tasks.placement_recall.rack import to_local
from labference_ros.tasks.placement_recall.recognisers import SeatTracker, rack_pose, seat_check

if TYPE_CHECKING:  # the simulator is imported where the transition runs, not by the profile's readers
    import mujoco

RETRACTED_M = 0.10  # the grip point at least this far above the rack's top face ...
RETRACTED_HOLD_S = 0.5  # ... with no finger on any tube, this long after the placement is confirmed
# Blanked camera frames from the transition on, in sim time: longer than a chunk (1 s at
# most), so every system observes the occluder at least once.
OCCLUDED_S = 2.0
OCCLUSION = {"occluder": "blanked_frames", "occluded_s": OCCLUDED_S,
             "trigger": f"target confirmed in a hole and the grip point {RETRACTED_M} m above the rack, "
                        f"no finger on a tube, for {RETRACTED_HOLD_S} s"}


class PlacementEnvironment:
    """One episode's occlusion and transition, driven by lab_sim's measurements."""

    def __init__(self, instance: PlacementInstance, contract: PlacementContract):
        self.instance, self.contract = instance, contract
        self.seat = SeatTracker(contract)
        self.placed_hole: str | None = None
        self.retracted_since: float | None = None
        self.transition_t: float | None = None  # when it ran (None: not yet)
        self.generations: dict[str, int] = {}  # object -> generation, where it is past the first

    def occluded(self, t: float) -> bool:
        """The cameras show nothing useful at t."""
        return self.transition_t is not None and self.transition_t - 1e-9 <= t < self.transition_t + OCCLUDED_S

    def update(self, m: WorldMeasurement, model: mujoco.MjModel, data: mujoco.MjData) -> dict | None:
        """At a measurement instant: runs the transition when it is due, on the simulator's
        state, and returns what the next published state carries; else None."""
        if self.transition_t is not None:
            return None
        pose = rack_pose(m, self.instance.rack_pose)
        target = m.objects.get(self.contract.target)
        if target is None:
            return None
        confirmed = self.seat.update(m.t, seat_check(target, pose, self.contract))
        self.placed_hole = confirmed or (self.placed_hole if self.seat.hole else None)
        if self.placed_hole is None or not self._withdrawn(m, pose):
            self.retracted_since = None
            return None
        self.retracted_since = m.t if self.retracted_since is None else self.retracted_since
        if m.t - self.retracted_since < RETRACTED_HOLD_S - 1e-9:
            return None
        return self._transition(m.t, model, data)

    def _withdrawn(self, m: WorldMeasurement, pose) -> bool:
        tcp = m.objects.get(TCP_OBJECT)
        if tcp is None or to_local(tcp.position, pose)[2] < RETRACTED_M:
            return False
        return not any({LEFT_FINGER, RIGHT_FINGER} & set(o.contacts) for o in m.objects.values() if o.kind == "tube")

    def _transition(self, t: float, model: mujoco.MjModel, data: mujoco.MjData) -> dict:
        import mujoco

        from labference_ros.tasks.placement_recall.transition import free_joint_address, occluded_transition

        start, qpos, qvel = float(data.time), data.qpos.copy(), data.qvel.copy()
        record = occluded_transition(model, data, self.instance.tubes, self.instance.moved_rack_pose,
                                     self.contract.rack)
        # The settling is the environment's, not the episode's: the clock goes back, and
        # everything but the tubes it moved (the robot first) is as it was before it.
        moved_q, moved_v = np.zeros(model.nq, bool), np.zeros(model.nv, bool)
        for name in record.moved:
            qadr, dadr = free_joint_address(model, model.body(name).id)
            moved_q[qadr:qadr + 7], moved_v[dadr:dadr + 6] = True, True
        data.qpos[~moved_q], data.qvel[~moved_v] = qpos[~moved_q], qvel[~moved_v]
        data.time = start
        mujoco.mj_forward(model, data)
        self.transition_t = t
        errors = [(v["position_error_m"], v["rotation_error_deg"]) for v in record.moved.values()] or [(0.0, 0.0)]
        return {"transition": {
            "id": f"{self.instance.instance_id}:transition-1", "movement": self.instance.movement,
            "placed_hole_seen_by_environment": self.placed_hole, "rack_before": record.rack_before,
            "rack_after": record.rack_after, "tubes_moved": sorted(record.moved), "settle_s": record.settle_s,
            "stable": record.stable, "valid": record.valid,
            "max_position_error_m": float(np.max([e[0] for e in errors])),
            "max_rotation_error_deg": float(np.max([e[1] for e in errors])),
            "occluded_from": t, "occluded_until": t + OCCLUDED_S, "occluder": OCCLUSION["occluder"],
            "object_generations": self._next_generations(record.moved)}}

    def _next_generations(self, rebuilt) -> dict[str, int]:
        """Object generation identifiers (paper 8.3): every object starts an episode as
        generation 1; the rack the transition moved and each tube it rebuilt on the moved
        rack become the next generation (same logical identity, a new body)."""
        for name in ("rack", *rebuilt):
            self.generations[name] = self.generations.get(name, 1) + 1
        return {name: self.generations.get(name, 1) for name in ("rack", *self.instance.tubes)}
