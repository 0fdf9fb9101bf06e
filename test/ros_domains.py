"""ROS domains for the graphs a test starts itself (nodes as processes, not through
`labference launch`): each is claimed with the launcher's own domain lock, so that no
other test, pytest worker or launch on this machine is on it at the same time."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

from labference_ros.domain_locks import claim_domain


@contextlib.contextmanager
def own_domain() -> Iterator[str]:
    """A free ROS domain id (as the environment wants it), held until the block ends."""
    claim = claim_domain(None)
    try:
        yield str(claim.domain_id)
    finally:
        claim.release()
