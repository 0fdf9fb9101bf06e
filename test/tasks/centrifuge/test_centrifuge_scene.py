"""The rotor's MuJoCo model against the insertion predicate: a tube let go
inside a socket slides to the seat and is judged seated in that slot, at any
rotor yaw; one let go beside the rotor is seated nowhere."""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
mujoco = pytest.importorskip("mujoco")

from labference_ros.core.measurements import ObjectMeasurement  # noqa: E402
from labference_ros.tasks.centrifuge.contract import contract_for  # noqa: E402
from labference_ros.tasks.centrifuge.insertion import ROTOR, SeatTracker, seat_check  # noqa: E402
from labference_ros.tasks.centrifuge.rotor import RotorPose, slot_frames  # noqa: E402
from labference_ros.tasks.centrifuge.scene import add_tube, quat_z_to, rotor_spec  # noqa: E402

CONTRACT = contract_for("extended")


def _measure(m, d, body) -> ObjectMeasurement:
    contacts = set()
    for i in range(d.ncon):
        g1, g2 = d.contact[i].geom1, d.contact[i].geom2
        if body in (m.geom_bodyid[g1], m.geom_bodyid[g2]):
            other = m.geom(g2 if m.geom_bodyid[g1] == body else g1).name
            contacts.add(ROTOR if other.startswith("rotor") else other)
    adr = m.jnt_dofadr[m.body_jntadr[body]]
    return ObjectMeasurement("tube_a", "tube", tuple(d.xpos[body]), tuple(d.xquat[body]),
                             float(np.linalg.norm(d.qvel[adr:adr + 3])),
                             float(np.linalg.norm(d.qvel[adr + 3:adr + 6])), tuple(sorted(contacts)))


def _drop(pose: RotorPose, bottom, down, seconds=1.5):
    spec = rotor_spec(CONTRACT, pose)
    add_tube(spec, CONTRACT, "tube_a", list(np.asarray(bottom) - np.asarray(down) * CONTRACT.tube.length_m / 2),
             quat_z_to(-np.asarray(down)))
    m = spec.compile()
    d = mujoco.MjData(m)
    body = m.body("tube_a").id
    tracker = SeatTracker(CONTRACT)
    confirmed = None
    check = None
    for step in range(int(round(seconds / m.opt.timestep))):
        mujoco.mj_step(m, d)
        if step % 10 == 9:
            check = seat_check(_measure(m, d, body), slot_frames(CONTRACT.rotor, pose), CONTRACT)
            confirmed = tracker.update(d.time, check) if confirmed is None else confirmed
    return check, confirmed


@pytest.mark.parametrize("yaw, slot", [(0.7, 3), (2.9, 10)])
def test_a_tube_let_go_in_a_socket_slides_to_the_seat_and_is_confirmed_there(yaw, slot):
    pose = RotorPose((0.5, 0.0, 0.11), yaw)
    f = slot_frames(CONTRACT.rotor, pose)[slot]
    check, confirmed = _drop(pose, f.mouth + 0.01 * f.axis, f.axis)
    assert check.seated, check.to_dict()
    assert check.depth_fraction == pytest.approx(1.0, abs=0.02) and check.axial_error_deg < 2.0
    assert confirmed == slot


def test_a_tube_let_go_beside_the_rotor_is_seated_nowhere():
    pose = RotorPose((0.5, 0.0, 0.11), 0.7)
    check, confirmed = _drop(pose, (0.5, 0.2, 0.05), (0.0, 0.0, -1.0), seconds=0.8)
    assert not check.seated and confirmed is None
