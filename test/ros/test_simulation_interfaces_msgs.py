"""simulation_interfaces built into the embedded environment: the 2.1.0 release's exact
definitions (env/simulation_interfaces), and every type's hash as the middleware
announces it equals the hash of those definitions computed independently (rosbags)."""
from __future__ import annotations

from type_hashes import announced_hashes, computed_hashes, definitions, files_digest

# sha256 over `sha256sum` of msg/, srv/ and action/ (sorted paths) at the 2.1.0 release
# (ros-simulation/simulation_interfaces commit 172a1b1c1b3ced62b99cddae9b4143e5bcddee8a).
RELEASE_DIGEST = "d91f7dd3d645e20096ba3c30285e4219f0013fa690adc40d3dfdb2a93911f690"


def test_the_definitions_are_the_releases():
    assert files_digest("simulation_interfaces") == RELEASE_DIGEST


def test_every_type_hash_equals_the_definitions():
    types = definitions("simulation_interfaces")
    expected = computed_hashes(types)
    announced = announced_hashes(types)
    assert announced == expected
    assert len(announced) == 15 + 2 * 22 + 3
