"""The weighing scene is built as FEASIBILITY.md requires, deterministically."""
import mujoco
import numpy as np

from labference_ros.tasks.weighing.objects import SAMPLE, STANDARDS
from labference_ros.sim.backend import CAMERA_NAMES
from labference_ros.sim.mujoco_backend import MujocoBackend, RenderSettings
from labference_ros.tasks.weighing.scene import STANDARD_SHAPES
from sim_helpers import make_instance


def test_physics_options_and_load_cell():
    b = MujocoBackend()
    b.load(make_instance(sample_mass_g=88.8))
    m = b.model
    assert m.opt.timestep == 0.002
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    assert m.opt.solver == mujoco.mjtSolver.mjSOL_NEWTON
    assert not m.opt.enableflags & mujoco.mjtEnableBit.mjENBL_SLEEP
    assert not m.opt.disableflags & (mujoco.mjtDisableBit.mjDSBL_MULTICCD
                                     | mujoco.mjtDisableBit.mjDSBL_NATIVECCD)
    pan = m.body("pan")
    assert pan.jntnum[0] == 0 and pan.parentid[0] == 0  # welded to the world
    assert np.isclose(m.body(SAMPLE).mass[0], 0.0888)
    # fingertip ridges do not collide; the flat pad does
    for finger in ("panda_left_finger", "panda_right_finger"):
        boxes = [g for g in range(m.ngeom) if m.geom_bodyid[g] == m.body(finger).id
                 and m.geom_type[g] == mujoco.mjtGeom.mjGEOM_BOX]
        assert sum(m.geom_contype[g] != 0 for g in boxes) == 1
    b.close()


def test_standards_are_distinct_and_labelled():
    sizes = {(s.radius, s.height) for s in STANDARD_SHAPES.values()}
    assert len(sizes) == len(STANDARDS)
    b = MujocoBackend()
    b.load(make_instance())
    m = b.model
    for name in STANDARDS:
        mat = m.geom_matid[m.geom(f"{name}_label").id]
        assert mat >= 0 and m.mat_texid[mat].max() >= 0
    b.close()


def test_same_instance_same_world():
    a, b = MujocoBackend(), MujocoBackend()
    a.load(make_instance(layout_seed=9))
    b.load(make_instance(layout_seed=9))
    assert a.save_state() == b.save_state()
    a.close()
    b.close()


def test_cameras_render_configured_sizes():
    b = MujocoBackend(RenderSettings(width=96, height=64, sizes={"display": (80, 80)}))
    b.load(make_instance())
    for cam in CAMERA_NAMES:
        img = b.render(cam)
        assert img.dtype == np.uint8 and img.shape == ((80, 80, 3) if cam == "display" else (64, 96, 3))
        assert img.std() > 5  # not a blank frame
    b.close()


def test_contacts_read_from_the_contact_arrays_match_the_contact_structs():
    b = MujocoBackend()
    b.load(make_instance())
    ident = b._geom_identity
    seen = 0
    for _ in range(40):  # weights settling on the table and the pan: contacts come and go
        b.step(5)
        d = b.data
        expected = [(ident[c.geom1], ident[c.geom2]) for c in d.contact[:d.ncon] if c.dist <= 0.0]
        assert b.contacts() == expected
        seen += len(expected)
    assert seen > 0
    b.close()
