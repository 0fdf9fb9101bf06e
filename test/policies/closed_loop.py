"""A small closed loop without ROS: observe -> act -> validate -> command ->
advance, on MujocoBackend, with the balance model driving the display.
It mirrors what policy_bridge does over topics and services."""
from __future__ import annotations

from dataclasses import dataclass, field

from labference_ros.core.action_spec import validate_chunk
from labference_ros.tasks.weighing.balance import BalanceModel, BalanceParameters
from labference_ros.core.observation import project_observation
from labference_ros.core.system import EvaluatorView
from labference_ros.sim.camera import calibration_from_model
from labference_ros.sim.mujoco_backend import MujocoBackend, RenderSettings

FRONT_SIZE = (240, 320)
BALANCE_PERIOD_S = 0.01


@dataclass
class EpisodeResult:
    backend: MujocoBackend
    reading: object
    chunks: int = 0
    rejected: list = field(default_factory=list)
    observations: list = field(default_factory=list)  # the PolicyObservations delivered


def make_backend() -> MujocoBackend:
    return MujocoBackend(RenderSettings(sizes={"front": FRONT_SIZE}, visual_meshes=False))


def evaluator_view(backend, instance) -> EvaluatorView:
    w = backend.measure()
    return EvaluatorView(instance=instance,
                         positions={n: o.position for n, o in w.objects.items()},
                         on_pan=frozenset(n for n, o in w.objects.items() if "pan" in o.contacts),
                         t=w.t)


def run_episode(system, instance, max_s: float = 30.0, after_finish_s: float = 2.0,
                keep_observations: bool = False) -> EpisodeResult:
    backend = make_backend()
    backend.load(instance)
    balance = BalanceModel(BalanceParameters(), backend.gravity)
    balance.calibrate_empty(backend.empty_pan_wrench().force_up)
    calib = calibration_from_model(backend.model, backend.data, "front", *FRONT_SIZE).to_dict()
    spec = system.spec
    system.reset(f"session-{instance.instance_id}", instance.policy_seed)
    result = EpisodeResult(backend, None)
    last_gripper = None
    finished_at = None
    reading = None
    k = 0
    while backend.sim_time < max_s:
        js = backend.joint_state()
        source = {"observation_id": f"obs-{k}", "episode_id": instance.instance_id,
                  "sim_time": backend.sim_time, "evidence_version": 0,
                  "images": {c: backend.render(c) for c in ("front", "wrist", "display")},
                  "joint_state": dict(zip(js.names, js.position)),
                  "instruction": instance.public_instruction(),
                  "camera_calibration": {"front": calib}}
        obs = project_observation(source)
        if keep_observations:
            result.observations.append(obs)
        k += 1
        ev = evaluator_view(backend, instance) if system.privileged else None
        verdict = validate_chunk(spec, system.act(obs, ev), 0, 0)
        result.chunks += 1
        if not verdict.accepted:
            result.rejected.append(verdict.record())
            rows = [None]  # hold one interval
        else:
            rows = verdict.applied
        for row in rows:
            if row is not None:
                check = backend.set_arm_targets(row[:7])
                assert check.ok, check.reason
                g = float(row[spec.gripper_index])
                if g != last_gripper:
                    cmd = spec.gripper.command(g)
                    backend.set_gripper(cmd["width"], cmd["speed"], cmd["force"],
                                        cmd["epsilon_inner"], cmd["epsilon_outer"], cmd["grasp"])
                    last_gripper = g
            for _ in range(int(round(spec.hold_interval_s / BALANCE_PERIOD_S))):
                backend.advance(BALANCE_PERIOD_S)
                w = backend.pan_wrench()
                reading = balance.update(backend.sim_time, w.force, w.torque)
            backend.set_display(reading.displayed_g, reading.stable)
        if getattr(system, "finished", False):
            finished_at = backend.sim_time if finished_at is None else finished_at
            if backend.sim_time - finished_at >= after_finish_s:
                break
    result.reading = reading
    return result
