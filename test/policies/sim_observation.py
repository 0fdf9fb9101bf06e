"""A real policy observation from the simulator: the display shows the
(hidden) sample mass as pixels, as it does in an episode."""
from __future__ import annotations

from closed_loop import FRONT_SIZE, make_backend

from labference_ros.core.balance import BalanceModel, BalanceParameters
from labference_ros.tasks.weighing.instances import generate
from labference_ros.core.observation import project_observation
from labference_ros.sim.camera import calibration_from_model


def observation_source(backend, instance, k: int = 0, history=()) -> dict:
    js = backend.joint_state()
    calib = calibration_from_model(backend.model, backend.data, "front", *FRONT_SIZE)
    return {"observation_id": f"{instance.instance_id}-obs-{k}", "episode_id": instance.instance_id,
            "sim_time": backend.sim_time, "evidence_version": 1,
            "images": {c: backend.render(c) for c in ("front", "wrist", "display")},
            "image_stamps": {c: backend.sim_time for c in ("front", "wrist", "display")},
            "joint_state": dict(zip(js.names, js.position)),
            "instruction": instance.public_instruction(),
            "camera_calibration": {"front": calib.to_dict()}, "history": list(history)}


def observe_settled(instance):
    """The observation (and balance reading) once the loaded instance has settled 1.5 s."""
    backend = make_backend()
    backend.load(instance)
    balance = BalanceModel(BalanceParameters(), backend.gravity)
    balance.calibrate_empty(backend.empty_pan_wrench().force_up)
    for _ in range(150):
        backend.advance(0.01)
        w = backend.pan_wrench()
        reading = balance.update(backend.sim_time, w.force, w.torque)
    backend.set_display(reading.displayed_g, reading.stable)
    obs = project_observation(observation_source(backend, instance))
    backend.close()
    return obs, reading


def settled_observation(index: int = 3):
    instance = generate("basic", index + 1, 1, 100, 0)[index]
    obs, reading = observe_settled(instance)
    return instance, obs, reading
