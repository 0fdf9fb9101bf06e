"""Nothing the project starts contacts another machine: the report in headless
Chromium, Rerun's viewer and one whole episode run inside a sealed network
namespace (netns.py) while tcpdump captures what leaves it. Zero packets, DNS
included. A control lookup from the same namespace is captured, which proves
the capture sees DNS."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from labference_ros.rosenv import loopback_environ
from netns import capture, needs_netns, sealed_namespace

REPO = pathlib.Path(__file__).resolve().parents[2]
BROWSER_DIR = REPO / "test" / "reporting"
CHROMIUM = "/usr/bin/chromium"
BIN = pathlib.Path(sys.executable).parent

pytestmark = [needs_netns, pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is absent")]


@pytest.fixture
def sealed_netns():
    with sealed_namespace() as ns:
        yield ns


def inside(ns: str, argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, **kw)


def test_the_capture_sees_a_dns_lookup_from_the_namespace(sealed_netns, tmp_path):
    """Control: a plain name lookup leaves through the veth (towards the resolver)."""
    packets = capture(sealed_netns, tmp_path, lambda: inside(sealed_netns, ["getent", "hosts", "example.org"],
                                                              timeout=60), bpf="udp or tcp")
    assert any(".53:" in p or "domain" in p for p in packets), packets


def _open_in_chromium(ns: str, tmp_path: pathlib.Path, only_background_flags: bool = False) -> list[str]:
    """Packets sent while headless Chromium (test/reporting/browser.py) opens a local page."""
    page = tmp_path / "report.html"
    page.write_text("<html><body><h1>Labference report</h1><p>no network here</p></body></html>")
    weaker = ("browser.NO_NETWORK_ARGS = ('--disable-background-networking', '--disable-component-update', "
              "'--disable-sync', '--no-first-run', '--disable-quic')") if only_background_flags else ""
    script = textwrap.dedent(f"""
        import pathlib, sys
        sys.path.insert(0, {str(BROWSER_DIR)!r})
        import browser
        {weaker}
        tmp = pathlib.Path({str(tmp_path / "browser")!r})
        tmp.mkdir()
        seen = browser.open_page(pathlib.Path({str(page)!r}), tmp)
        assert "Labference report" in seen["text"], seen["text"]
        print("OPENED", flush=True)
    """)

    def browse():
        res = inside(ns, [sys.executable, "-c", script], timeout=240)
        assert "OPENED" in res.stdout, res.stdout + res.stderr

    return capture(ns, tmp_path, browse)


def test_the_report_in_chromium_sends_nothing(sealed_netns, tmp_path):
    assert _open_in_chromium(sealed_netns, tmp_path) == []


def test_chromium_with_only_its_background_networking_flags_looks_up_google_hosts(sealed_netns, tmp_path):
    """Control: the flags the tests used before resolve names on start (accounts,
    clients2, www.google.com); the capture sees those lookups."""
    packets = _open_in_chromium(sealed_netns, tmp_path, only_background_flags=True)
    assert any("google.com" in p for p in packets), packets


def test_the_rerun_viewer_sends_nothing(sealed_netns, tmp_path):
    """The SDK writing a recording, then the viewer, its analytics off (`rerun analytics
    disable` in its HOME), serving it on loopback for a few seconds."""
    rrd = tmp_path / "view.rrd"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "BROWSER": "true"}
    subprocess.run([str(BIN / "rerun"), "analytics", "disable"], env=env, check=True, capture_output=True, timeout=60)

    def serve():
        # The SDK writes a recording as `labference view` does (recording/viewer.py) ...
        inside(sealed_netns, [sys.executable, "-c", "import rerun as rr, sys; rec = rr.RecordingStream("
                              "'labference_view'); rec.save(sys.argv[1]); rec.log('referee/episode', "
                              "rr.TextDocument('x'), static=True)", str(rrd)], check=True, timeout=120)
        # ... and the viewer serves it.
        res = subprocess.run(["ip", "netns", "exec", sealed_netns, "timeout", "-s", "INT", "8", str(BIN / "rerun"),
                              str(rrd), "--web-viewer", "--bind", "127.0.0.1", "--web-viewer-port", "0",
                              "--port", "0"], env=env, capture_output=True, text=True, timeout=60)
        assert res.returncode in (0, 124, 130, -2), res.stdout + res.stderr

    assert capture(sealed_netns, tmp_path, serve) == []


@pytest.mark.slow
def test_one_episode_sends_nothing(sealed_netns, tmp_path):
    run_dir = tmp_path / "run"
    env = loopback_environ()
    env.pop("ROS_DOMAIN_ID", None)  # the namespace's own DDS: any free domain

    def episode():
        res = subprocess.run(["ip", "netns", "exec", sealed_netns, str(BIN / "labference"), "launch",
                              "weighing_sim.launch.py", "episodes:=1", "image_width:=160", "image_height:=120",
                              "deadline_s:=20", f"output_dir:={run_dir}"],
                             env=env, capture_output=True, text=True, timeout=500)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]

    assert capture(sealed_netns, tmp_path, episode) == []
    assert (run_dir / "summary.json").exists()
