"""core.rejections: consecutive rejected chunks end the episode as invalid,
with the rejection and its likely cause in one line."""
from __future__ import annotations

import numpy as np
import pytest

from labference_ros.core.action_conversion import identity
from labference_ros.core.action_spec import reference_joint_spec
from labference_ros.core.episode_loop import EpisodeLoop
from labference_ros.core.failures import error_kind
from labference_ros.core.rejections import RejectionRun, likely_cause, rejected_chunks_limit
from labference_ros.core.system import EvaluationValidityError
from test_episode_loop import HOME, Instance, System, observe, rows


def test_the_limit_spans_the_declared_sim_time():
    assert rejected_chunks_limit(3.0, 50.0) == 150
    assert rejected_chunks_limit(0.1, 15.0) == 2
    assert rejected_chunks_limit(0.0, 50.0) == 1


def test_an_accepted_chunk_starts_the_count_again():
    run = RejectionRun(3)
    run.note(True, ["x"], 0.0)
    run.note(True, ["x"], 0.02)
    run.note(False, [], 0.04)
    run.note(True, ["x"], 0.06)
    run.note(True, ["x"], 0.08)
    with pytest.raises(EvaluationValidityError, match="3 consecutive chunks rejected"):
        run.note(True, ["x"], 0.10)


def test_no_limit_never_raises():
    run = RejectionRun(None)
    for k in range(1000):
        run.note(True, ["x"], k * 0.02)


def test_seven_columns_name_the_stock_checkpoint_as_the_likely_cause():
    assert "end-effector" in likely_cause(["native: dimension 7 != 8"])
    assert "units" in likely_cause(["panda_joint1 = 9.0 at row 0 outside [-2.8, 2.8] rad"])


class LimitedSystem(System):
    rejected_chunks_limit = 4


def test_the_episode_loop_raises_at_the_systems_limit_with_a_named_kind():
    spec = reference_joint_spec(50.0, 50)
    loop = EpisodeLoop(LimitedSystem(), identity(spec), episode_id="ep", instance=Instance())
    seven = np.tile(HOME, (3, 1))  # 7 columns: a stock LIBERO checkpoint's shape
    observe(loop, 0.0)
    assert loop.take_chunk(rows(2), 0.0).accepted  # after an accepted reply, the limit decides
    for k in range(1, 4):
        observe(loop, k * 0.02)
        assert loop.take_chunk(seven, k * 0.02).status == "rejected"
    observe(loop, 0.08)
    with pytest.raises(EvaluationValidityError) as err:
        loop.take_chunk(seven, 0.08)
    message = str(err.value)
    assert "4 consecutive chunks rejected" in message and "dimension 7 != 8" in message
    assert "likely cause" in message and error_kind(message) == "policy_actions_rejected"


def test_the_episode_loop_refuses_a_first_reply_of_seven_columns_at_once():
    spec = reference_joint_spec(50.0, 50)
    loop = EpisodeLoop(LimitedSystem(), identity(spec), episode_id="ep", instance=Instance())
    observe(loop, 0.0)
    with pytest.raises(EvaluationValidityError) as err:
        loop.take_chunk(np.tile(HOME, (3, 1)), 0.0)
    assert "first reply's actions rejected" in str(err.value) and "dimension 7 != 8" in str(err.value)


def test_a_system_without_a_limit_holds_as_before():
    spec = reference_joint_spec(50.0, 50)
    loop = EpisodeLoop(System(), identity(spec), episode_id="ep", instance=Instance())
    for k in range(200):
        observe(loop, k * 0.02)
        loop.take_chunk(np.tile(HOME, (3, 1)), k * 0.02)
    observe(loop, 4.0)
    assert loop.take_chunk(rows(2), 4.0).accepted


def test_a_first_reply_of_another_action_dimension_ends_the_episode_at_once():
    run = RejectionRun(150)
    with pytest.raises(EvaluationValidityError) as err:
        run.note(True, ["native: dimension 7 != 8"], 0.0)
    assert "first reply's actions rejected" in str(err.value) and "end-effector" in str(err.value)
    assert error_kind(str(err.value)) == "policy_actions_rejected"


def test_a_dimension_mismatch_after_accepted_chunks_counts_toward_the_limit_only():
    run = RejectionRun(3)
    run.note(False, [], 0.0)
    run.note(True, ["native: dimension 7 != 8"], 0.02)
    run.note(True, ["native: dimension 7 != 8"], 0.04)
    with pytest.raises(EvaluationValidityError, match="3 consecutive chunks rejected"):
        run.note(True, ["native: dimension 7 != 8"], 0.06)


def test_a_first_reply_out_of_range_is_not_structural():
    run = RejectionRun(2)
    run.note(True, ["panda_joint1 = 9.0 at row 0 outside [-2.8, 2.8] rad"], 0.0)
    with pytest.raises(EvaluationValidityError, match="2 consecutive chunks rejected"):
        run.note(True, ["panda_joint1 = 9.0 at row 0 outside [-2.8, 2.8] rad"], 0.02)


def test_no_limit_never_ends_at_the_first_reply_either():
    RejectionRun(None).note(True, ["native: dimension 7 != 8"], 0.0)
