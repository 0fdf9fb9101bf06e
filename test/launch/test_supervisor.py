"""The supervisor ends the graph together: one exit stops all, signals are forwarded, no orphans."""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil

from labference_ros.launcher.plan import NodeProcess
from labference_ros.launcher.supervisor import Supervisor, describe_exit, shell_status

PY = sys.executable


def node(name: str, code: str, ends_graph: bool = False) -> NodeProcess:
    return NodeProcess(name, (PY, "-u", "-c", textwrap.dedent(code)), ends_graph)


SLEEPER = """
    import signal, sys, time
    signal.signal(signal.SIGTERM, lambda *a: (print('got SIGTERM', flush=True), sys.exit(0)))
    print('ready', flush=True)
    time.sleep(600)
"""


def wait_until(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_a_node_that_dies_stops_the_others_and_is_named():
    out = io.StringIO()
    nodes = [node("steady", SLEEPER), node("runner", SLEEPER, ends_graph=True),
             node("crasher", "import time; time.sleep(0.5); print('boom', flush=True); raise SystemExit(5)")]
    outcome = Supervisor(nodes, env=dict(os.environ), out=out, grace_s=10).run()
    text = out.getvalue()
    assert outcome.unexpected == ["crasher"]
    assert "crasher died (exit code 5): stopping all nodes" in text
    assert "[crasher] boom" in text and "[steady] got SIGTERM" in text and "[runner] got SIGTERM" in text
    assert outcome.returncodes == {"steady": 0, "runner": 0, "crasher": 5}
    # The runner said 0 when stopped, but the graph ended because a node died: not a success.
    assert outcome.exit_code == 5


def test_exit_status_is_the_ends_graph_nodes():
    out = io.StringIO()
    nodes = [node("steady", SLEEPER), node("runner", "import time; time.sleep(0.3); raise SystemExit(7)", True)]
    outcome = Supervisor(nodes, env=dict(os.environ), out=out).run()
    assert outcome.exit_code == 7 and "runner finished (exit code 7)" in out.getvalue()
    assert outcome.returncodes["steady"] == 0


def test_a_node_ignoring_sigterm_is_killed_after_the_grace_period():
    out = io.StringIO()
    stubborn = """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(600)
    """
    nodes = [node("stubborn", stubborn), node("runner", "import time; time.sleep(0.5)", True)]
    outcome = Supervisor(nodes, env=dict(os.environ), out=out, grace_s=1.0).run()
    assert outcome.returncodes["stubborn"] == -signal.SIGKILL
    assert "killing stubborn" in out.getvalue()


def test_exit_descriptions():
    assert describe_exit(-9) == "killed by signal SIGKILL" and describe_exit(3) == "exit code 3"
    assert shell_status(-15) == 143 and shell_status(2) == 2


LAUNCHER = """
import sys, textwrap
from labference_ros.launcher.plan import NodeProcess
from labference_ros.launcher.supervisor import Supervisor
code = textwrap.dedent('''{sleeper}''')
child = 'import subprocess, sys; subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]); ' \\
        'exec(compile(' + repr(code) + ', "x", "exec"))'
nodes = [NodeProcess(n, (sys.executable, "-u", "-c", child), n == "runner") for n in ("a", "b", "runner")]
sys.exit(Supervisor(nodes, env=dict(__import__("os").environ), grace_s=10).run().exit_code)
"""


def test_sigterm_to_the_launcher_stops_every_descendant():
    # Each node also starts a grandchild that ignores nothing and never exits on its own.
    launcher = subprocess.Popen([PY, "-u", "-c", LAUNCHER.format(sleeper=SLEEPER)], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    proc = psutil.Process(launcher.pid)
    try:
        assert wait_until(lambda: len(proc.children(recursive=True)) >= 6), proc.children(recursive=True)
        descendants = proc.children(recursive=True)
        launcher.send_signal(signal.SIGTERM)
        out, _ = launcher.communicate(timeout=60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert "received SIGTERM: stopping all nodes" in out
    gone, alive = psutil.wait_procs(descendants, timeout=10)
    assert not alive, f"orphans: {alive}"
    assert launcher.returncode == 0  # the runner exited 0 on its SIGTERM


SLOW_WRITER = """
    import os, signal, sys, time
    def stop(*_):
        time.sleep(1.0)  # writing the interrupted episode's records
        print('records written:', open(os.environ['LABFERENCE_STOP_REASON_FILE']).read().strip(), flush=True)
        sys.exit(4)
    signal.signal(signal.SIGTERM, stop)
    print('ready', flush=True)
    time.sleep(600)
"""

STUBBORN = """
    import signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print('ready', flush=True)
    time.sleep(600)
"""


def test_a_repeated_sigterm_kills_the_others_but_lets_the_runner_write_its_records():
    import threading

    out = io.StringIO()
    nodes = [node("stubborn", STUBBORN), node("runner", SLOW_WRITER, ends_graph=True)]
    supervisor = Supervisor(nodes, env=dict(os.environ), out=out, grace_s=30)

    def signal_twice():
        assert wait_until(lambda: out.getvalue().count("] ready") == 2)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGTERM)

    sender = threading.Thread(target=signal_twice)
    sender.start()
    outcome = supervisor.run()
    sender.join()
    text = out.getvalue()
    assert "received SIGTERM: stopping all nodes" in text and "SIGKILL" not in text.split("signal repeated")[0]
    assert "signal repeated: killing stubborn; waiting for runner" in text
    assert "[runner] records written: the launcher received SIGTERM" in text
    assert outcome.exit_code == 4 and outcome.returncodes["stubborn"] == -signal.SIGKILL
    assert not os.path.exists(supervisor.reason_path)


def test_nodes_stopped_because_one_died_are_told_which():
    out = io.StringIO()
    nodes = [node("runner", SLOW_WRITER, ends_graph=True),
             node("crasher", "import time; time.sleep(1.0); raise SystemExit(3)")]
    Supervisor(nodes, env=dict(os.environ), out=out, grace_s=10).run()
    assert "[runner] records written: node crasher left the graph: it died (exit code 3)" in out.getvalue()
