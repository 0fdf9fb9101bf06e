"""What ``safety:=MODE`` checks beyond the ActionSpec, in one place for the policy
bridge, the Oracle's continuations and the command lines that offer the choice.
MuJoCo (the arm's kinematics) is loaded only for a mode that needs it."""
from __future__ import annotations

SAFETY_MODES = ("none", "franka")


def safety_check(mode: str):
    """The envelope check applied to every chunk (None: the ActionSpec check only)."""
    if mode == "none":
        return None
    if mode == "franka":
        from labference_ros.skills.kinematics import cell_envelope, envelope_check

        return envelope_check(cell_envelope())
    raise ValueError(f"safety must be one of {', '.join(SAFETY_MODES)}, got {mode!r}")


def safety_record(mode: str) -> dict:
    """What run.json's policy section says of the mode: nothing for "none" (as runs before
    the envelope existed), else {"safety": mode}, so a report never pools the two."""
    return {} if mode == "none" else {"safety": mode}
