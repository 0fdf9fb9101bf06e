"""lab_sim's checkpoint services: save the state (physics, controller targets, display)
under an id, restore it bit-exactly, sim time and its measurements going on from there."""
from __future__ import annotations

from labference_ros.sim.trajectory import pack_checkpoint, unpack_checkpoint


def save_checkpoint(sim, request, response):
    held = bool(sim.commands)
    if not sim.loaded or sim.advancing or held:
        response.success = False
        response.message = ("no scene loaded" if not sim.loaded else "an advance is running" if sim.advancing
                            else "a command for a later boundary is held")
        return response
    cid, path = sim.checkpoints.save(pack_checkpoint(sim.backend.save_state(), sim.follower), request.label)
    response.success, response.checkpoint_id, response.path = True, cid, str(path)
    response.sim_time = sim.backend.sim_time
    return response


def restore_checkpoint(sim, request, response):
    blob = sim.checkpoints.load(request.checkpoint_id)
    if blob is None:
        response.success, response.message = False, f"unknown checkpoint {request.checkpoint_id!r}"
        return response
    try:
        sim_blob, follower = unpack_checkpoint(blob)
        sim.backend.restore_state(sim_blob)
        sim.follower = follower
        sim.new_timeline()  # the display the checkpoint saved stays until new readings
    except ValueError as exc:
        response.success, response.message = False, str(exc)
        return response
    sim.grid.restart(sim.backend.sim_time)
    response.success, response.sim_time = True, sim.backend.sim_time
    return response
