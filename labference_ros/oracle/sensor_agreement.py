"""The sensor-only referee beside the privileged one, in one in-process episode.

An episode runs through the graph's episode loop (continuation.run_in_world) on the
simulated cell and is scored by the family's referee from the privileged world
state, which also ends it. A second referee, built the same way, scores the same
episode from what a real cell measures, through the family's sensor estimator
(the estimator the world_estimator node runs): marker poses, the fingertip centre
from the arm's joint states, the gripper's width and command, the balance reading.
Both referees get the same deliveries and reports at the same instants.

What this checks is the estimator's derivation of support, holding, release and the
reading's consistency on real contact physics. The markers are the objects' true
poses (ideal tracking), hidden while both fingers touch an object (its top-face
marker is under the hand), so the camera and the marker detector
(perception/fiducials.py, tested on rendered images on its own) are not in this loop.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from labference_ros.mujoco_cell.panda_model import ARM_JOINTS
from labference_ros.core.agreement import differences, event_differences
from labference_ros.core.episode_loop import STOP_HOLD_S
from labference_ros.core.measurements import LEFT_FINGER, RIGHT_FINGER, SensorFrame, WorldMeasurement
from labference_ros.policies import make
from labference_ros.skills.kinematics import FingertipKinematics

from .continuation import run_in_world
from .world import World

def ideal_markers(m: WorldMeasurement) -> dict:
    """Every object's true pose, except one both fingers touch (its marker is under the hand)."""
    return {name: (o.position, o.orientation) for name, o in m.objects.items()
            if not (LEFT_FINGER in o.contacts and RIGHT_FINGER in o.contacts)}


class ShadowedReferee:
    """The privileged referee (it ends the episode) with the sensor referee fed the same
    deliveries and reports, and the estimator's measurement at every privileged one."""

    def __init__(self, primary, sensor, estimator, world: World):
        self.primary, self.sensor, self.estimator, self.world = primary, sensor, estimator, world
        self.kinematics = FingertipKinematics()
        self.frames = 0
        self.estimate_s = 0.0  # the estimator's own time (forward kinematics included), summed over frames
        self.referee_s = 0.0   # the privileged referee's time over the same measurements

    def __getattr__(self, name):
        return getattr(self.primary, name)

    def deliver_observation(self, *args, **kwargs) -> list[dict]:
        if not self.sensor.finished:
            self.sensor.deliver_observation(*args, **kwargs)
        return self.primary.deliver_observation(*args, **kwargs)

    def report_operation(self, *args, **kwargs) -> list[dict]:
        if not self.sensor.finished:
            self.sensor.report_operation(*args, **kwargs)
        return self.primary.report_operation(*args, **kwargs)

    def step(self, m: WorldMeasurement) -> list[dict]:
        if not self.sensor.finished:
            js = self.world.backend.joint_state()
            by_name = dict(zip(js.names, js.position))
            start = time.perf_counter()
            fingertip = self.kinematics.centre([by_name[j] for j in ARM_JOINTS])
            frame = SensorFrame(t=m.t, markers=ideal_markers(m), fingertip=fingertip, gripper_width=m.gripper_width,
                                gripper_closing=m.gripper_closing, balance=m.balance)
            estimated = self.estimator.estimate(frame)
            self.estimate_s += time.perf_counter() - start
            self.frames += 1
            self.sensor.step(estimated)
        start = time.perf_counter()
        records = self.primary.step(m)
        self.referee_s += time.perf_counter() - start
        return records

    def finish(self, t: float, reason: str = "episode_end") -> list[dict]:
        if not self.sensor.finished:
            self.sensor.finish(t, reason)
        return self.primary.finish(t, reason)


@dataclass
class Agreement:
    instance_id: str
    system: str
    privileged: dict  # scores.json of the referee that read the simulator's world state
    sensor: dict      # scores.json of the referee that read the sensor estimator
    frames: int
    estimate_s: float
    referee_s: float
    differences: list[str] = field(default_factory=list)
    sensor_validity: list[dict] = field(default_factory=list)  # the sensor referee's validity events

    @property
    def agrees(self) -> bool:
        return not self.differences


def run_with_shadow(system_name: str, instance, *, params: dict | None = None, max_s: float = 40.0) -> Agreement:
    """One episode of ``system_name`` on ``instance``, scored by both referees."""
    world = World(instance)
    try:
        family = world.family
        contract = family.contract_for(instance.condition)

        def new_referee():
            return family.make_referee(contract, instance, episode_id=instance.instance_id, session_id="",
                                       deadline_s=max_s)

        referee = ShadowedReferee(new_referee(), new_referee(), family.sensor_estimator(instance), world)
        system = make(system_name, **(params or {}))
        session = f"session-{instance.instance_id}"
        system.reset(session, instance.policy_seed)
        referee.step(world.measure())
        reason = run_in_world(system, world, referee, session=session, deadline_t=max_s, stop_hold_s=STOP_HOLD_S)
        if not referee.sensor.finished:  # the privileged referee ended the episode by itself (completion)
            referee.sensor.finish(world.t, reason)
        privileged, sensor = referee.primary.scores(), referee.sensor.scores()
        return Agreement(instance.instance_id, system_name, privileged, sensor, referee.frames, referee.estimate_s,
                         referee.referee_s,
                         differences(privileged, sensor) + event_differences(referee.primary.events,
                                                                             referee.sensor.events),
                         [e for e in referee.sensor.events if e["category"] == "validity"])
    finally:
        world.close()
