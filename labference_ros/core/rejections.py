"""Every chunk rejected is an error, not a result (paper 5.2).

A tested system whose every reply is refused never moves the arm: the
episode would run to its deadline and end like a normal run. The
RejectionRun counts consecutive rejected chunks; at the system's declared
limit the episode ends as an evaluation-validity error that names the last
rejection and its likely cause (a convention mismatch, almost always). A
first reply whose action dimension differs from the profile's ends it at
once: no later reply of that checkpoint can fit.
Pure: no ROS, no simulator.
"""
from __future__ import annotations

import math
import re

from labference_ros.core.system import EvaluationValidityError

# Sim seconds of consecutive rejected chunks a remote system gets by default
# before the episode is invalid (a refused chunk holds the arm one interval).
DEFAULT_MAX_REJECTED_S = 3.0
MESSAGE = "consecutive chunks rejected"
FIRST_REPLY = "first reply's actions rejected"

# (pattern in a rejection reason, what usually causes it)
_CAUSES: tuple[tuple[str, str], ...] = (
    (r"dimension 7 != 8", "the server answers 7 columns (a stock LIBERO/SimplerEnv checkpoint's end-effector "
                          "deltas and gripper?) where the profile declares 7 joints and a gripper: choose the "
                          "profile for its action space (e.g. libero_ee)"),
    (r"dimension \d+ != \d+", "the server's action dimension differs from the profile's action space: "
                              "check the profile against the checkpoint"),
    (r"length \d+ exceeds", "the server's chunk is longer than the declared maximum: set max_chunk_length "
                            "or open_loop_horizon"),
    (r"non-finite", "the model produces NaN/inf (a broken checkpoint or unnormalised inputs)"),
    (r"outside \[", "the rows are not in the declared units or convention (absolute vs delta vs velocity, "
                    "rad vs normalised): check the profile's action space"),
    (r"safety envelope", "the rows move faster than the robot's limits at the declared control rate"),
    (r"not numeric|must be \[L x", "the reply's actions are not an [L x dim] number array"),
)


def likely_cause(reasons: list[str]) -> str:
    text = "; ".join(reasons)
    for pattern, cause in _CAUSES:
        if re.search(pattern, text):
            return cause
    return "the server's action convention differs from the declared profile"


def rejected_chunks_limit(max_rejected_s: float, control_rate_hz: float) -> int:
    """The number of consecutive refused chunks (one hold interval each) that
    spans max_rejected_s of sim time."""
    return max(1, math.ceil(float(max_rejected_s) * float(control_rate_hz) - 1e-9))


# A reply whose action dimension is not the profile's: a checkpoint's action space does
# not change between requests, so the first such reply already names the mismatch.
STRUCTURAL = re.compile(r"dimension \d+ != \d+")


class RejectionRun:
    """Counts consecutive rejected chunks; raises at the limit (None: no limit), and at
    the first reply of an episode whose action dimension the profile does not declare."""

    def __init__(self, limit: int | None):
        if limit is not None and int(limit) < 1:
            raise ValueError("the rejected-chunk limit must be at least 1")
        self.limit = None if limit is None else int(limit)
        self.count = 0
        self.since: float | None = None
        self.accepted_any = False

    def note(self, rejected: bool, reasons: list[str], t: float) -> None:
        if not rejected:
            self.count, self.since = 0, None
            self.accepted_any = True
            return
        self.count += 1
        self.since = t if self.since is None else self.since
        if self.limit is not None and not self.accepted_any and any(STRUCTURAL.search(r) for r in reasons):
            raise EvaluationValidityError(
                f"{FIRST_REPLY} (sim {t:.2f} s): {'; '.join(reasons)[:300]}; "
                f"likely cause: {likely_cause(reasons)}")
        if self.limit is not None and self.count >= self.limit:
            raise EvaluationValidityError(
                f"{self.count} {MESSAGE} (sim {self.since:.2f}-{t:.2f} s, limit {self.limit}): "
                f"{'; '.join(reasons)[:300]}; likely cause: {likely_cause(reasons)}")
