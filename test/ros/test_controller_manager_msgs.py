"""controller_manager_msgs built into the embedded environment: ros2_control 5.16.0's exact
files for ListControllers (env/controller_manager_msgs), and every type's hash as the
middleware announces it equals the one computed from those files independently (rosbags),
so franka_arm_bridge's and `doctor --rig`'s calls match a robot PC's controller_manager."""
from __future__ import annotations

from type_hashes import announced_hashes, computed_hashes, definitions, files_digest

# sha256 over `sha256sum` of msg/ChainConnection.msg, msg/ControllerState.msg and
# srv/ListControllers.srv at ros2_control's 5.16.0 tag (commit ab50366f92e77d716ea756e326fb959951a28a57).
RELEASE_DIGEST = "367b3db9174a443a78b721748e4e1eacd5fc172dad0867284c2cde7697ed36f0"


def test_the_definitions_are_the_releases():
    assert files_digest("controller_manager_msgs") == RELEASE_DIGEST


def test_every_type_hash_equals_the_definitions():
    types = definitions("controller_manager_msgs")
    assert sorted(types) == ["controller_manager_msgs/msg/ChainConnection", "controller_manager_msgs/msg/ControllerState",
                             "controller_manager_msgs/srv/ListControllers_Request",
                             "controller_manager_msgs/srv/ListControllers_Response"]
    assert announced_hashes(types) == computed_hashes(types)
