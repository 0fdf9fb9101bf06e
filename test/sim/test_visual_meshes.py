"""The cameras draw the arm links' large visual meshes decimated (cell.assets.VISUAL_MESH_RULE):
the physics is the same model, the hand and fingers keep every face, and the images are
the full meshes' images to within a fraction of an intensity level on average."""
import fast_simplification
import mujoco
import numpy as np
import pytest

from labference_ros.cell.assets import SIMPLIFIED_FACE_SHARE, SIMPLIFY_MIN_FACES
from labference_ros.mujoco_cell.panda_model import HOME_ARM_Q, panda_spec
from labference_ros.sim.mujoco_backend import MujocoBackend, RenderSettings
from labference_ros.mujoco_cell import scene_base
from sim_helpers import make_instance

BODY_FIELDS = ("body_mass", "body_inertia", "body_ipos", "body_iquat")
COLLISION_GEOM_FIELDS = ("geom_size", "geom_pos", "geom_quat", "geom_dataid", "geom_friction")


def mesh_faces(model) -> dict[str, int]:
    return {model.mesh(i).name: int(model.mesh_facenum[i]) for i in range(model.nmesh)}


def test_only_large_link_visuals_lose_faces_and_the_physics_is_unchanged():
    full, simplified = panda_spec().compile(), panda_spec(simplified_visuals=True).compile()
    before, after = mesh_faces(full), mesh_faces(simplified)
    shrunk = {name for name in before if after[name] < before[name]}
    assert shrunk and all(name.startswith("link") and not name.endswith("_c") for name in shrunk)
    for name in shrunk:
        assert before[name] >= SIMPLIFY_MIN_FACES
        assert after[name] <= before[name] * SIMPLIFIED_FACE_SHARE * 1.05
    assert all(after[n] == before[n] for n in before if n.startswith(("hand", "finger")) or n.endswith("_c"))
    assert sum(after.values()) < 0.45 * sum(before.values())
    for field in BODY_FIELDS:
        assert np.array_equal(getattr(full, field), getattr(simplified, field)), field
    colliding = (full.geom_contype | full.geom_conaffinity) != 0
    assert colliding.sum() > 10 and np.array_equal(colliding, (simplified.geom_contype | simplified.geom_conaffinity) != 0)
    for field in COLLISION_GEOM_FIELDS:
        assert np.array_equal(getattr(full, field)[colliding], getattr(simplified, field)[colliding]), field
    runs = []
    for model in (full, simplified):
        data = mujoco.MjData(model)
        data.qpos[:7] = HOME_ARM_Q
        data.ctrl[:7] = np.array(HOME_ARM_Q) + 0.3
        mujoco.mj_step(model, data, 300)
        runs.append(data.qpos.copy())
    assert np.array_equal(*runs)


@pytest.fixture(scope="module")
def both_renderings(monkeypatch_module):
    instance = make_instance(layout_seed=3)
    images = {}
    for simplified in (False, True):
        monkeypatch_module.setattr(scene_base, "panda_spec", lambda simplified_visuals=False, s=simplified: panda_spec(s))
        backend = MujocoBackend(RenderSettings(width=320, height=240))
        backend.load(instance)
        backend.set_arm_targets(np.array(HOME_ARM_Q) + np.array([0.3, 0.2, 0, -0.2, 0, 0.3, 0]))
        backend.step(400)
        images[simplified] = {cam: backend.render(cam).astype(int) for cam in ("front", "wrist")}
        backend.close()
    return images


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.mark.parametrize("camera", ["front", "wrist"])
def test_the_simplified_arm_looks_like_the_full_one(both_renderings, camera):
    full, simplified = both_renderings[False][camera], both_renderings[True][camera]
    difference = np.abs(full - simplified).max(axis=2)
    assert difference.mean() < 0.5  # intensity levels of 255, averaged over the image
    assert (difference > 40).mean() < 0.002  # a silhouette pixel here and there


def test_decimated_meshes_come_back_from_the_disk_cache_and_a_torn_entry_is_redone(tmp_path, monkeypatch):
    from labference_ros.mujoco_cell import panda_model

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = next(m.file for m in panda_spec().meshes if m.name == "link1")
    panda_model._simplified_mesh.cache_clear()
    first = panda_model._simplified_mesh(path)
    (entry,) = (tmp_path / "labference" / "meshes").iterdir()
    entry.write_bytes(entry.read_bytes()[:100])  # a write cut short
    panda_model._simplified_mesh.cache_clear()
    again = panda_model._simplified_mesh(path)
    assert entry.stat().st_size > 10_000  # rewritten whole
    panda_model._simplified_mesh.cache_clear()

    def no_decimation(*args, **kwargs):
        raise AssertionError("decimated again although the cache holds the mesh")

    monkeypatch.setattr(fast_simplification, "simplify", no_decimation)
    cached = panda_model._simplified_mesh(path)
    panda_model._simplified_mesh.cache_clear()
    for a, b in ((first, again), (first, cached)):
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    entry.write_bytes(b"")  # a file created but never written
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert np.array_equal(panda_model._simplified_mesh(path)[1], first[1])
    panda_model._simplified_mesh.cache_clear()
