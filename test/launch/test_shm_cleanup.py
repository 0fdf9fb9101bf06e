"""Fast DDS shared-memory leftovers of a killed participant go; a living one's stay."""
from __future__ import annotations

import os
import signal
import time

from labference_ros.launcher.shm import SHM_DIR, clean_dead_participants, dead_participant_files
from labference_ros.rosenv import loopback_environ
from ros_domains import own_domain
from rosproc import peer


def own_segments(pid: int, timeout: float = 30.0) -> set[str]:
    """Segments whose lock file (fastdds_<16 hex>_el) this process holds open: its own."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        segs = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            name = os.path.basename(target)
            if target.startswith("/dev/shm/fastdds_") and name.endswith("_el") and "_port" not in name:
                segs.add(name[:-3])
        if segs:
            return segs
        time.sleep(0.1)
    return set()


def test_killed_participant_segments_are_removed_and_living_ones_kept():
    # Separate domains: peers that discover each other map each other's segments,
    # and a segment a living process maps is rightly kept.
    with own_domain() as doomed_domain, own_domain() as living_domain:
        doomed = peer("serve", env=loopback_environ({**os.environ, "ROS_DOMAIN_ID": doomed_domain}))
        living = peer("talk", env=loopback_environ({**os.environ, "ROS_DOMAIN_ID": living_domain}))
        check_cleanup(doomed, living)


def check_cleanup(doomed, living) -> None:
    try:
        doomed_segs, living_segs = own_segments(doomed.popen.pid), own_segments(living.popen.pid)
        assert doomed_segs and living_segs
        mine = doomed_segs - living_segs
        assert mine
        doomed.popen.send_signal(signal.SIGKILL)
        doomed.popen.wait(10)
        dead = {p.name for p in dead_participant_files(min_age_s=0)}
        assert {f"{s}_el" for s in mine} <= dead and mine <= dead
        assert not (living_segs - mine) & dead and not {f"{s}_el" for s in living_segs - mine} & dead
        clean_dead_participants(min_age_s=0)
        assert not any((SHM_DIR / s).exists() for s in mine)
        assert all((SHM_DIR / s).exists() for s in living_segs - mine)
    finally:
        living.stop()
        doomed.stop()


def test_recent_leftovers_are_left_alone():
    doomed = peer("serve")
    try:
        segs = own_segments(doomed.popen.pid)
        assert segs
        doomed.popen.send_signal(signal.SIGKILL)
        doomed.popen.wait(10)
        # Just written: it could be a participant being created right now.
        assert not segs & {p.name for p in dead_participant_files(min_age_s=3600)}
    finally:
        doomed.stop()
        clean_dead_participants(min_age_s=0)
