"""A closed loop without ROS: the policy bridge's episode loop
(core.episode_loop.EpisodeLoop, driven by oracle.continuation.run_in_world)
on MujocoBackend with the balance model driving the display, scored by the
referee as in the graph."""
from __future__ import annotations

from dataclasses import dataclass, field

from labference_ros.core.episode_loop import STOP_HOLD_S
from labference_ros.oracle.continuation import run_in_world
from labference_ros.oracle.world import World
from labference_ros.sim.mujoco_backend import MujocoBackend, RenderSettings

FRONT_SIZE = (240, 320)


@dataclass
class EpisodeResult:
    backend: MujocoBackend
    reading: object
    chunks: int = 0
    rejected: list = field(default_factory=list)
    observations: list = field(default_factory=list)  # the PolicyObservations delivered
    reports: list = field(default_factory=list)  # explicit reports the loop sent to the referee
    scores: dict = field(default_factory=dict)  # the referee's scores.json


def make_backend() -> MujocoBackend:
    return MujocoBackend(RenderSettings(sizes={"front": FRONT_SIZE}, visual_meshes=False))


def run_episode(system, instance, max_s: float = 30.0, after_finish_s: float = STOP_HOLD_S,
                keep_observations: bool = False, envelope=None) -> EpisodeResult:
    """The graph's episode loop (core.episode_loop through the Oracle's run_in_world),
    scored by the family's referee; the world stays open for the caller's checks."""
    world = World(instance)
    family = world.family
    referee = family.make_referee(family.contract_for(instance.condition), instance,
                                  episode_id=instance.instance_id, session_id="", deadline_s=max_s)
    session = f"session-{instance.instance_id}"
    system.reset(session, instance.policy_seed)
    result = EpisodeResult(world.backend, None)

    def note(entry):
        if entry["record"] == "report_sent":
            result.reports.append(entry)
        if entry["record"] == "chunk":
            result.chunks += 1
            if entry["status"] not in ("accepted", "clipped"):
                result.rejected.append(entry)

    if keep_observations:
        act = system.act

        def keep(obs, evaluator=None):
            result.observations.append(obs)
            return act(obs, evaluator)

        system.act = keep
    referee.step(world.measure())
    run_in_world(system, world, referee, session=session, deadline_t=max_s, stop_hold_s=after_finish_s,
                 record=note, envelope=envelope)
    result.reading = world.reading
    result.scores = referee.scores()
    return result
