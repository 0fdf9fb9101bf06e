"""A ROS domain per launch, so that two graphs on one machine never meet.

Each launch holds an exclusive flock(2) on `<lock dir>/domain-<id>.lock` for as
long as it or any of its nodes runs: the lock's file descriptor is inherited by
every node process, and the kernel drops the lock when the last of them exits,
so a crashed or SIGKILLed launch frees its domain without any cleanup, and a
domain stays taken while a killed launcher's nodes are still stopping.

Nodes started any other way (`ros2 launch`, by hand) hold a shared lock on
their domain's file for their lifetime (`hold_for_node`, called by every node's
main), so a launch also sees a graph that no labference launcher started; a node
that finds a launch's exclusive lock there takes its shared one once that goes.

Without ROS_DOMAIN_ID a launch claims the lowest free domain; with it, the
launch takes that domain's lock or refuses (after a short wait, so that a
graph still stopping can finish).
"""
from __future__ import annotations

import errno
import fcntl
import os
import pathlib
import threading
import time
from dataclasses import dataclass

# ROS 2 accepts 0..232 on Linux (DDS ports exist for those), and advises 0..101:
# domains 102..232 use ports inside Linux's ephemeral range (32768..60999), which
# any program may be given at random, so such a domain can collide now and then.
# A user's ROS_DOMAIN_ID may be anything ROS 2 accepts (with a note past 101);
# automatic claims stay in 1..101. 0 is every ROS tool's default and 42 was this
# project's old default: claims avoid both.
MAX_DOMAIN_ID = 232
ADVISED_MAX_DOMAIN_ID = 101
AUTO_DOMAINS = tuple(d for d in range(1, ADVISED_MAX_DOMAIN_ID + 1) if d != 42)
LOCK_DIR_ENV = "LABFERENCE_DOMAIN_LOCK_DIR"
DEFAULT_LOCK_DIR = "/tmp/labference-ros-domains"
# Set by the launcher for its nodes: they run under its (inherited) lock.
HELD_ENV = "LABFERENCE_DOMAIN_HELD"
# How long a launch told a busy domain waits for it before refusing: a graph
# that was just stopped (its nodes finishing) frees it within seconds.
BUSY_WAIT_S = 8.0
_node_lock_fd: int | None = None


class DomainError(Exception):
    """A domain that cannot be used; the message is meant for a person."""


def ephemeral_port_note(domain_id: int) -> str:
    """A note for a domain whose DDS ports lie in Linux's ephemeral range ('' otherwise)."""
    if domain_id <= ADVISED_MAX_DOMAIN_ID:
        return ""
    return (f"ROS domain {domain_id} uses UDP ports in Linux's ephemeral range (32768..60999): another program "
            f"given one of them at random makes discovery fail; ROS 2 advises 0..{ADVISED_MAX_DOMAIN_ID}")


@dataclass
class DomainClaim:
    domain_id: int
    fd: int
    path: pathlib.Path
    chosen: bool  # True: claimed automatically; False: the user's ROS_DOMAIN_ID

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def lock_dir() -> pathlib.Path:
    d = pathlib.Path(os.environ.get(LOCK_DIR_ENV) or DEFAULT_LOCK_DIR)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DomainError(f"cannot create the ROS domain lock directory {d}: {exc.strerror}") from None
    if d.stat().st_uid == os.getuid():
        try:
            # Shared by every user of the machine: DDS domains are machine-wide.
            d.chmod(0o1777)
        except OSError:
            pass
    return d


def _open_lock(path: pathlib.Path) -> int:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:
        fd = os.open(path, os.O_RDONLY)  # another user's lock file: flock needs no write access
    return fd


def holder(path: pathlib.Path) -> str:
    """Who wrote the lock file last (pid and command), for messages."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def lock_holders(path: pathlib.Path, limit: int = 3) -> list[str]:
    """'pid N (command)' of the processes holding a lock on the file (Linux /proc/locks),
    so that a refusal can say which process has the domain."""
    try:
        inode = path.stat().st_ino
        lines = pathlib.Path("/proc/locks").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    pids = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] == str(inode):
            if fields[4] not in pids:
                pids.append(fields[4])
    out = []
    for pid in pids[:limit]:
        try:
            cmd = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            cmd = ""
        out.append(f"pid {pid} ({cmd.strip()[:120]})" if cmd.strip() else f"pid {pid}")
    return out


def lock_path(domain_id: int, directory: pathlib.Path | None = None) -> pathlib.Path:
    return (directory or lock_dir()) / f"domain-{domain_id}.lock"


def _try_lock(domain_id: int, directory: pathlib.Path) -> DomainClaim | None:
    path = lock_path(domain_id, directory)
    fd = _open_lock(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
    except OSError:
        pass  # the note is for messages only
    os.set_inheritable(fd, True)
    return DomainClaim(domain_id, fd, path, chosen=False)


def claim_domain(requested: str | None, busy_wait_s: float = BUSY_WAIT_S) -> DomainClaim:
    """The domain this launch runs on, locked; DomainError when none can be had."""
    directory = lock_dir()
    if requested is None or requested.strip() == "":
        for domain_id in AUTO_DOMAINS:
            claim = _try_lock(domain_id, directory)
            if claim is not None:
                claim.chosen = True
                return claim
        raise DomainError(f"no free ROS domain: every domain in 1..{ADVISED_MAX_DOMAIN_ID} is held by another launch "
                          f"(locks in {directory})")
    try:
        domain_id = int(requested)
    except ValueError:
        domain_id = -1
    if not 0 <= domain_id <= MAX_DOMAIN_ID:
        raise DomainError(f"ROS_DOMAIN_ID must be a whole number 0..{MAX_DOMAIN_ID}, got {requested!r}; "
                          f"unset it to let the launch claim a free domain")
    deadline = time.monotonic() + busy_wait_s
    claim = _try_lock(domain_id, directory)
    while claim is None and time.monotonic() < deadline:
        time.sleep(0.1)
        claim = _try_lock(domain_id, directory)
    if claim is None:
        holders = lock_holders(lock_path(domain_id, directory))
        held = f" (held by {'; '.join(holders)})" if holders else ""
        raise DomainError(f"ROS domain {domain_id} (ROS_DOMAIN_ID) is in use{held}: another labference launch or "
                          f"nodes of this graph are running on it, and their nodes would mix with this run's. "
                          f"Unset ROS_DOMAIN_ID to claim a free domain, or choose another")
    return claim


def hold_for_node() -> None:
    """A node not started by the launcher marks its domain as used for its lifetime
    (a shared lock: several nodes of one graph hold it together)."""
    global _node_lock_fd
    if _node_lock_fd is not None or os.environ.get(HELD_ENV):
        return
    try:
        domain_id = int(os.environ.get("ROS_DOMAIN_ID", "0"))
        fd = _open_lock(lock_path(domain_id))
    except (OSError, ValueError, DomainError):
        return  # only a guard for launches; the node itself runs regardless
    _node_lock_fd = fd
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        # A launch holds it (its graph and this node share the domain), or a launch was
        # only trying it: mark the domain as soon as that lock goes, not never.
        threading.Thread(target=_take_when_free, args=(fd,), name="domain-lock", daemon=True).start()


def _take_when_free(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # blocks until no exclusive lock is held
    except OSError:
        pass  # only a guard for launches; the node runs regardless
