"""What ``safety:=MODE`` checks beyond the ActionSpec, in one place for the policy
bridge, the Oracle's continuations and the command lines that offer the choice.
MuJoCo (the arm's kinematics) is loaded only for a mode that needs it."""
from __future__ import annotations

# franka: the Panda's velocity and acceleration limits on the rows (the simulated arm's
# envelope since it was added); panda and fr3: that robot's limits from core.robots,
# its position range, velocity bounds (position-dependent on the FR3) and jerk too,
# on the rows and on the motion the controller interpolates between them, and no
# contact of arm or hand with the cell's fixtures (skills.fixture_contacts).
SAFETY_MODES = ("none", "franka", "panda", "fr3")
FIXTURE_MODES = ("panda", "fr3")


def checks_fixtures(mode: str) -> bool:
    """Whether the mode's check needs the episode's scene (fixture contacts)."""
    return mode in FIXTURE_MODES


def safety_check(mode: str):
    """The envelope check applied to every chunk (None: the ActionSpec check only): the
    robot's limits and the workspace box; ``with_fixtures`` adds the episode's fixtures."""
    if mode == "none":
        return None
    if mode not in SAFETY_MODES:
        raise ValueError(f"safety must be one of {', '.join(SAFETY_MODES)}, got {mode!r}")
    from labference_ros.core.robots import robot_model
    from labference_ros.skills.kinematics import cell_envelope, envelope_check

    robot = None if mode == "franka" else robot_model(mode)
    check = envelope_check(cell_envelope(robot=robot))
    if robot is not None:
        check.stop_acceleration = robot.max_acceleration  # what a pause's smooth stop keeps within
    return check


def for_episode(limits, mode: str, family, instance):
    """The episode's check: ``limits`` (safety_check(mode)), and in the robot modes no
    contact with the fixtures of the instance's scene (built here: about 0.2-0.8 s)."""
    if not checks_fixtures(mode):
        return limits
    from labference_ros.skills.fixture_contacts import fixture_scene

    return with_fixtures(limits, fixture_scene(family, instance))


def with_fixtures(limits, scene):
    """``limits`` (a safety_check) and no contact of arm or hand with the fixtures of
    ``scene``, the episode's compiled scene (mujoco.MjModel), on the rows and the
    motion to and between them."""
    from labference_ros.skills.fixture_contacts import FixtureContacts

    fixtures = FixtureContacts(scene)

    def check(rows, start, start_velocity, interval_s):
        reasons = limits(rows, start, start_velocity, interval_s)
        contact = fixtures.first_contact(rows, start)
        return reasons + ([contact] if contact else [])
    check.stop_acceleration = getattr(limits, "stop_acceleration", None)
    return check


def safety_record(mode: str) -> dict:
    """What run.json's policy section says of the mode: nothing for "none" (as runs before
    the envelope existed), else {"safety": mode}, so a report never pools the two."""
    return {} if mode == "none" else {"safety": mode}
