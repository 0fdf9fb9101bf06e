"""Run a graph's node processes together and end them together.

Each node's output is prefixed with its name. SIGINT/SIGTERM to the launcher
is forwarded to every node (to the `ends_graph` node first: it records the
episode in flight as stopped before the nodes it calls go away); when any node
exits the others are stopped (the node marked `ends_graph`, the episode
runner, exiting is the normal end) and
the launcher says which node ended it and why. The launcher's exit status is
that of the `ends_graph` node, unless another node's death stopped the graph
and the `ends_graph` node still said 0: then it is the dead node's (or 1). Nodes that ignore a stop signal are killed
after a grace period, so no process outlives the launcher.

Why the graph is being stopped reaches the nodes before the stop signal: a file
named by $LABFERENCE_STOP_REASON_FILE (one line, e.g. "lab_sim died (exit code
3)"), so the episode runner records the node that left, not only that it was
stopped. A repeated SIGINT/SIGTERM kills every other node at once but still
gives the `ends_graph` node its grace period: it is writing the interrupted
episode's records.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from .plan import NodeProcess

PR_SET_PDEATHSIG = 1
POLL_S = 0.05
STOP_REASON_ENV = "LABFERENCE_STOP_REASON_FILE"


def _die_with_parent() -> None:
    # Runs in the child before exec: a hard-killed launcher still takes its nodes along.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


def shell_status(returncode: int) -> int:
    """A Popen return code as a process exit status (signal N -> 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass
class Outcome:
    exit_code: int
    ended_by: str  # "<node> exited", "signal SIGINT", ...
    returncodes: dict[str, int] = field(default_factory=dict)
    unexpected: list[str] = field(default_factory=list)  # nodes that exited before being told to stop


class Supervisor:
    def __init__(self, nodes: Sequence[NodeProcess], env: Mapping[str, str], out: TextIO | None = None,
                 grace_s: float = 10.0, pass_fds: Sequence[int] = ()):
        self.nodes = list(nodes)
        self.pass_fds = tuple(pass_fds)  # e.g. the ROS domain lock, held by every node
        self.env = dict(env)
        self.out = out or sys.stdout
        self.grace_s = grace_s
        self.procs: dict[str, subprocess.Popen] = {}
        self._pumps: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._signal: int | None = None  # the first stop signal received
        self._repeated = False  # a second one: stop waiting for all but the ends_graph node
        # A launcher process sets this: a stop signal that comes once the graph is down (a
        # third SIGTERM while it finishes) is ignored, not left to end it by default.
        self.ignore_late_signals = False
        self._reason_fd, self.reason_path = tempfile.mkstemp(prefix="labference-stop-", suffix=".txt")
        self.env[STOP_REASON_ENV] = self.reason_path

    # ------------------------------------------------------------------ output
    def say(self, text: str) -> None:
        with self._lock:
            self.out.write(f"[launch] {text}\n")
            self.out.flush()

    def _pump(self, name: str, stream) -> None:
        buf = b""
        while True:
            chunk = stream.read1(4096) if hasattr(stream, "read1") else stream.read(4096)
            if not chunk:
                break
            # Progress bars redraw with \r: each redraw becomes its own line.
            buf += chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            *lines, buf = buf.split(b"\n")
            self._emit(name, lines)
        if buf:
            self._emit(name, [buf])

    def _emit(self, name: str, lines: list[bytes]) -> None:
        lines = [ln for ln in lines if ln.strip()]
        if not lines:
            return
        with self._lock:
            for line in lines:
                self.out.write(f"[{name}] {line.decode('utf-8', 'replace')}\n")
            self.out.flush()

    # ------------------------------------------------------------- lifecycle
    def start(self) -> None:
        for node in self.nodes:
            proc = subprocess.Popen(node.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=_die_with_parent, pass_fds=self.pass_fds)
            self.procs[node.name] = proc
            pump = threading.Thread(target=self._pump, args=(node.name, proc.stdout), daemon=True)
            pump.start()
            self._pumps.append(pump)
            self.say(f"started {node.name} (pid {proc.pid})")

    def _on_signal(self, signum, _frame) -> None:
        if self._signal is None:
            self._signal = signum
        else:  # a second Ctrl-C: stop waiting politely
            self._repeated = True

    def _tell_nodes_why(self, reason: str) -> None:
        """Written before the stop signal goes out, read by a node that is stopped."""
        try:
            os.write(self._reason_fd, (reason + "\n").encode())
        except OSError:
            pass  # only a better message for the records; the stop goes on regardless

    def _send(self, sig: int, only_alive: bool = True) -> None:
        for proc in self.procs.values():
            if proc.poll() is None or not only_alive:
                try:
                    os.killpg(proc.pid, sig)  # the node's whole session, grandchildren included
                except ProcessLookupError:
                    pass

    def _alive(self) -> list[str]:
        return [name for name, proc in self.procs.items() if proc.poll() is None]

    def _signal_node(self, name: str, sig: int) -> None:
        try:
            os.killpg(self.procs[name].pid, sig)  # the node's whole session, grandchildren included
        except ProcessLookupError:
            pass

    def _kill(self, names: list[str]) -> None:
        for name in names:
            self._signal_node(name, signal.SIGKILL)

    def stop_all(self, sig: int = signal.SIGTERM) -> None:
        ends = {n.name for n in self.nodes if n.ends_graph}
        # The node that ends the graph first: it records the episode in flight as stopped
        # (and why), before the nodes it calls go away and their absence is blamed instead.
        first = [name for name in self._alive() if name in ends]
        for name in first:
            self._signal_node(name, sig)
        deadline = time.monotonic() + self.grace_s
        while any(self.procs[name].poll() is None for name in first) and time.monotonic() < deadline \
                and not self._repeated:
            time.sleep(POLL_S)
        self._send(sig)
        deadline = time.monotonic() + self.grace_s
        hurried = False
        while self._alive() and time.monotonic() < deadline:
            if self._repeated and not hurried:
                hurried = True
                others = [name for name in self._alive() if name not in ends]
                self.say("signal repeated: killing " + (", ".join(others) or "no other node")
                         + "; waiting for " + (", ".join(sorted(ends)) or "nothing") + " to write its records")
                self._kill(others)
            time.sleep(POLL_S)
        left = self._alive()
        if left:
            self.say(f"killing {', '.join(left)}: still running {self.grace_s:.0f} s after the stop signal")
            self._send(signal.SIGKILL)
        for proc in self.procs.values():
            proc.wait()
        # Nodes' sessions may hold stray grandchildren: take them along too.
        self._send(signal.SIGKILL, only_alive=False)
        for pump in self._pumps:
            pump.join(timeout=2.0)

    def run(self) -> Outcome:
        """Start every node, wait until one exits or a signal arrives, stop the rest."""
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.start()
            ended_by, unexpected = self._wait_for_first_end()
            self.stop_all(self._signal if self._signal in (signal.SIGINT, signal.SIGTERM) else signal.SIGTERM)
        finally:
            for s, handler in previous.items():
                signal.signal(s, signal.SIG_IGN if self.ignore_late_signals else handler)
            os.close(self._reason_fd)
            try:
                os.unlink(self.reason_path)
            except OSError:
                pass
        codes = {name: proc.returncode for name, proc in self.procs.items()}
        for name, code in codes.items():
            if name not in unexpected and code not in (0, -signal.SIGINT, -signal.SIGTERM):
                self.say(f"{name} ended with {describe_exit(code)} while stopping")
        return Outcome(self._exit_code(codes, unexpected), ended_by, codes, unexpected)

    def _wait_for_first_end(self) -> tuple[str, list[str]]:
        ends = {n.name for n in self.nodes if n.ends_graph}
        while True:
            if self._signal is not None:
                name = signal.Signals(self._signal).name
                self.say(f"received {name}: stopping all nodes")
                self._tell_nodes_why(f"the launcher received {name}")
                return f"signal {name}", []
            exited = [name for name, proc in self.procs.items() if proc.poll() is not None]
            if exited:
                for name in exited:
                    code = self.procs[name].returncode
                    if name in ends:
                        self.say(f"{name} finished ({describe_exit(code)}): stopping the graph")
                    else:
                        self.say(f"{name} died ({describe_exit(code)}): stopping all nodes")
                        self._tell_nodes_why(f"node {name} left the graph: it died ({describe_exit(code)})")
                return f"{exited[0]} exited", exited
            time.sleep(POLL_S)

    def _exit_code(self, codes: dict[str, int], unexpected: list[str]) -> int:
        ends = [n.name for n in self.nodes if n.ends_graph]
        if ends:
            status = shell_status(codes[ends[0]])
            died = [name for name in unexpected if name not in ends]
            if died and status == 0:
                # Stopped because another node died (e.g. at start, before the runner
                # had anything to report): the run did not succeed, whatever it says.
                return shell_status(codes[died[0]]) or 1
            return status
        # No designated node: the first that died decides, else a clean stop is 0.
        for name in unexpected:
            if codes[name] != 0:
                return shell_status(codes[name])
        return 0
