"""Reference executor for Skill replacement (paper 6.2): attempts the
operation the tested system selected -- even a wrong but feasible one --
with the scripted planner and evaluator-measured geometry. Its own
attempts are logged so its success and failure are recorded separately."""
from __future__ import annotations

from labference_ros.core.measurements import PAN
from labference_ros.core.operations import Operation
from labference_ros.skills.motion import PickPlacePlanner, PickPlaceSettings


class ReferenceExecutor:
    name = "scripted_pick_place"

    def __init__(self, world, rate_hz: float = 100.0, on_attempt=None):
        self.world = world
        self.planner = PickPlacePlanner(PickPlaceSettings(rate_hz=rate_hz))
        self.on_attempt = on_attempt  # callback(Operation) -> bool: scope check before acting
        self.attempts: list[dict] = []

    def locate(self, op: Operation):
        """-> (object, body centre xyz, destination xy, "pan" | "table") or None."""
        if self.on_attempt is not None and not self.on_attempt(op):
            self.attempts.append({"t": self.world.t, "operation": op.to_dict(), "status": "refused"})
            return None
        inst = self.world.instance
        objects = self.world.measure().objects
        if op.object not in objects:
            self.attempts.append({"t": self.world.t, "operation": op.to_dict(), "status": "infeasible"})
            return None
        dest = "pan" if op.destination == PAN else "table"
        dest_xy = inst.layout["balance"] if dest == "pan" else inst.layout[op.object]
        self.attempts.append({"t": self.world.t, "operation": op.to_dict(), "status": "attempted"})
        return op.object, objects[op.object].position, tuple(dest_xy), dest
