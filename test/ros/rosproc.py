"""Helpers to run ROS peer processes from tests and wait on what they print."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time

from labference_ros.rosenv import loopback_environ

PEER = os.path.join(os.path.dirname(__file__), "..", "peers", "ros_peer.py")


class Proc:
    """A child process whose stdout lines are collected in the background."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, prefix: list[str] | None = None):
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.popen = subprocess.Popen(
            (prefix or []) + argv, env=env or loopback_environ(), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.popen.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, prefix: str, count: int = 1, timeout: float = 30.0) -> list[str]:
        """Lines starting with ``prefix``; waits until ``count`` arrived or the timeout."""
        deadline = time.monotonic() + timeout
        hits = [s for s in self.seen if s.startswith(prefix)]
        while len(hits) < count and time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.popen.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            if line.startswith(prefix):
                hits.append(line)
        return hits

    def next_json(self, prefix: str, accept, timeout: float = 30.0) -> dict:
        """The JSON after ``prefix`` on the first line from now on that ``accept`` takes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen = len([s for s in self.seen if s.startswith(prefix)])
            lines = self.wait_for(prefix, count=seen + 1, timeout=deadline - time.monotonic())
            if len(lines) <= seen:
                break
            record = json.loads(lines[-1][len(prefix):])
            if accept(record):
                return record
        raise AssertionError(f"no such {prefix.strip()} line; last lines: {self.seen[-5:]}")

    def stop(self, timeout: float = 10.0) -> int:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        return self.popen.returncode


def peer(mode: str, *args: str, prefix: list[str] | None = None, env: dict[str, str] | None = None) -> Proc:
    return Proc([sys.executable, PEER, mode, *args], env=env, prefix=prefix)
