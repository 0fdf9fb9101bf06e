"""The Franka safety envelope (safety:=franka) on the cell's real kinematics: the
pilot's reference systems run inside it, and a chunk into the table is refused."""
from __future__ import annotations

import numpy as np
import pytest

from closed_loop import run_episode
from labference_ros.core.robots import FR3
from labference_ros.policies import make
from labference_ros.skills.kinematics import FingertipKinematics, cell_envelope, envelope_check
from labference_ros.tasks.weighing.instances import generate

HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


@pytest.mark.parametrize("robot", [None, FR3], ids=["franka", "fr3"])
@pytest.mark.parametrize("condition, seed", [("basic", 1), ("extended", 3)])
def test_the_scripted_expert_completes_inside_the_envelope_with_no_chunk_refused(condition, seed, robot):
    # fr3: the FR3's limits, its position-dependent velocity and jerk, between rows too.
    instance = generate(condition, 1, task_seed=seed, layout_seed=seed, policy_seed=0)[0]
    result = run_episode(make("scripted_expert"), instance, max_s=60.0,
                         envelope=envelope_check(cell_envelope(robot=robot)))
    try:
        assert result.chunks > 0 and result.rejected == []
        assert result.scores["valid_complete"] is True
    finally:
        result.backend.close()


def test_a_descent_through_the_table_is_refused_on_the_real_kinematics():
    kinematics = FingertipKinematics()
    envelope = cell_envelope()
    start = kinematics.positions(HOME[None])[0]
    assert start[2] > 0.3
    # The shoulder leans forward (joint 2 by 1.8 rad, joint 4 by 0.5 rad): the fingertips
    # end below the table top.
    rows = np.array([HOME + np.array([0, 1.8, 0, 0.5, 0, 0, 0]) * (k + 1) / 90 for k in range(90)])
    tips = kinematics.positions(rows)
    assert tips[0][2] > 0.3 and tips[-1][2] < envelope.workspace_min[2]  # really through the table
    slow = 1.0  # seconds per row: only the box is at stake
    reasons = envelope.violations(rows, HOME, None, slow, kinematics.positions)
    assert len(reasons) == 1 and "outside the workspace box" in reasons[0]
