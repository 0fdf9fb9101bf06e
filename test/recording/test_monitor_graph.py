"""Monitoring: lab_sim + balance + referee + recorder + monitor as processes, one
recorded episode (a correct transfer driven through the ROS interfaces) watched
by a subscriber as RViz would; then the bag's 3D topics and `labference view`."""
from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys
from collections import Counter

import pytest

from labference_ros.domain_locks import claim_domain
from labference_ros.monitoring import description
from labference_ros.recording.bag_reader import EpisodeBagReader
from labference_ros.rosenv import loopback_environ
from browser import NO_NETWORK_ARGS
from rosproc import Proc

REPO = pathlib.Path(__file__).resolve().parents[2]
DRIVER = REPO / "test" / "peers" / "weighing_driver.py"
PROBE = REPO / "test" / "peers" / "monitor_probe.py"
CAMERA_FRAMES = {f"{c}_camera{s}" for c in ("front", "wrist", "display") for s in ("", "_optical_frame")}
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"  # Debian's, as test/reporting/browser.py


@pytest.fixture(scope="module")
def watched():
    """(run dir, probe lines) of one recorded episode with the monitor running."""
    import tempfile

    claim = claim_domain(None)
    env = loopback_environ()
    env["ROS_DOMAIN_ID"] = str(claim.domain_id)
    run = pathlib.Path(tempfile.mkdtemp(prefix="monitor_run_"))
    procs = [Proc([sys.executable, "-m", f"labference_ros.nodes.{name}"], env=env)
             for name in ("lab_sim", "balance", "referee", "recorder", "monitor")]
    probe = Proc([sys.executable, str(PROBE)], env=env)
    try:
        assert probe.wait_for("READY", timeout=60), probe.seen[-20:]
        driver = Proc([sys.executable, str(DRIVER), "correct", str(run / "ep"), "3", "--record",
                       "--episode", "ep_monitor"], env=env)
        lines = driver.wait_for("SCORES", timeout=400)
        driver.stop()
        assert lines, driver.seen[-30:]
        probe.wait_for("NEVER", timeout=2.0)  # drain what is still in flight
        for p in procs:
            assert p.popen.poll() is None, f"a node died: {p.seen[-20:]}"
    finally:
        probe.stop()
        for p in procs:
            p.stop()
        claim.release()
    return run, list(probe.seen)


def urdf_tree() -> dict[str, str]:
    """child -> parent of the published robot description."""
    import xml.etree.ElementTree as ET

    xml = description.compose(description.REPO_URDF_DIR / description.CELL_URDF)
    return {j.find("child").get("link"): j.find("parent").get("link") for j in ET.fromstring(xml).iter("joint")}


@pytest.mark.slow
def test_rviz_inputs_robot_description_and_every_link_on_tf(watched):
    _run, seen = watched
    tree = urdf_tree()
    described = [line for line in seen if line.startswith("DESCRIPTION ")]
    assert described, seen[-20:]
    assert set(described[0].split()[1].split(",")) == set(tree) | {"world"}
    published = {}
    for line in seen:
        if line.startswith(("TF ", "STATIC ")):
            _kind, parent, child = line.split()
            published[child] = parent
    # Every URDF link has a transform from its URDF parent; the cameras' optical frames too.
    assert {c: published.get(c) for c in tree} == tree
    assert CAMERA_FRAMES <= set(published)
    assert published["wrist_camera"] == "panda_hand"
    moving = {line.split()[2] for line in seen if line.startswith("TF ")}
    assert {f"panda_link{i}" for i in range(1, 8)} <= moving
    # Standards' poses stay off /tf (evaluator-side markers only).
    assert not {"std_10", "std_20", "std_50", "std_100", "sample"} & set(published)


@pytest.mark.slow
def test_legal_set_markers_match_the_referees_legal_set(watched):
    _run, seen = watched
    legal = {}
    for line in seen:
        if line.startswith("LEGAL "):
            parts = line.split(" ")
            legal[parts[1]] = parts[2]
    markers = [line.split(" ") for line in seen if line.startswith("MARKERS ")]
    assert legal and markers, seen[-30:]
    shown = [(opp, objs) for _tag, opp, objs in markers if opp in legal]
    assert shown
    for opp, objs in shown:
        assert objs == legal[opp], (opp, objs, legal[opp])
    # At least one opportunity whose legal set names objects was highlighted.
    assert any(objs for _opp, objs in shown)
    assert "CLEARED" in seen


@pytest.mark.slow
def test_bag_holds_tf_and_marker_topics_with_their_schemas(watched):
    run, _seen = watched
    reader = EpisodeBagReader(run / "ep" / "bag")
    topics = reader.topics()
    assert topics["/tf"] == "tf2_msgs/msg/TFMessage"
    assert topics["/tf_static"] == "tf2_msgs/msg/TFMessage"
    assert topics["/referee/markers"] == "visualization_msgs/msg/MarkerArray"
    assert topics["/robot_description"] == "std_msgs/msg/String"
    from rosbags.highlevel import AnyReader

    from labference_ros.recording.topics import typestore

    with AnyReader([reader.dir], default_typestore=typestore()) as bag:
        schemas = {c.topic: c.msgdef.data for c in bag.connections}
        assert "geometry_msgs/TransformStamped[] transforms" in schemas["/tf"]
        assert "visualization_msgs/Marker[] markers" in schemas["/referee/markers"]
        static = [bag.deserialize(raw, c.msgtype) for c, _t, raw in bag.messages()
                  if c.topic == "/tf_static"]
    children = {t.child_frame_id for msg in static for t in msg.transforms}
    # lab_sim's fixtures and cameras (at its reset) and the monitor's robot joints (at the first joint state).
    assert {"table", "balance_body", "pan_load_cell", "panda_link0", "panda_hand"} | CAMERA_FRAMES <= children


@pytest.mark.slow
def test_view_writes_a_rerun_recording_with_every_stream(watched):
    run, _seen = watched
    episode = run / "ep"
    out = subprocess.run([sys.executable, "-c", "from labference_ros.cli.main import main; main()", "view",
                          str(episode)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rrd = episode / "view.rrd"
    assert rrd.is_file() and str(rrd) in out.stdout
    from labference_ros.recording.viewer import stream_row_counts

    rows = stream_row_counts(rrd)
    bag = Counter(topic for topic, _t, _m in EpisodeBagReader(episode / "bag").messages(
        {"/cameras/front/image_raw", "/cameras/wrist/image_raw", "/cameras/display/image_raw",
         "/joint_states", "/balance/reading", "/referee/events"}))
    for cam in ("front", "wrist", "display"):
        assert rows[f"cameras/{cam}"] == bag[f"/cameras/{cam}/image_raw"] > 0
    for joint in [f"panda_joint{i}" for i in range(1, 8)] + ["panda_finger_joint1", "panda_finger_joint2"]:
        assert rows[f"joints/{joint}"] == bag["/joint_states"] > 0
    assert rows["balance/displayed_g"] == rows["balance/stable"] == bag["/balance/reading"] > 0
    assert rows["referee/events"] == bag["/referee/events"] > 0
    assert rows["referee/verdicts"] == 1  # the correct transfer's one scored first choice


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
def test_viewer_renders_the_recording_in_a_headless_browser(watched, tmp_path):
    """Rerun's web viewer (served on loopback by the rerun-sdk binary) in headless
    Chromium, WebGL on SwiftShader: a screenshot of the scrubbable timeline."""
    import time

    import imageio.v2 as imageio
    import numpy as np

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is absent (env/bootstrap.sh --test installs it)")
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.chrome.service import Service

    from labference_ros.recording.viewer import write_recording

    run, _seen = watched
    rrd, _counts = write_recording(run / "ep", tmp_path / "view.rrd")
    web, grpc = _free_port(), _free_port()
    rerun = pathlib.Path(sys.executable).with_name("rerun")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "BROWSER": "true"}
    # The viewer's usage analytics are on unless its config (under HOME) says off.
    subprocess.run([str(rerun), "analytics", "disable"], env=env, check=True, capture_output=True, timeout=60)
    server = subprocess.Popen([str(rerun), str(rrd), "--web-viewer", "--bind", "127.0.0.1", "--web-viewer-port",
                               str(web), "--port", str(grpc), "--renderer", "webgl"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)  # the entry point runs the viewer binary as a child
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--use-gl=angle", "--use-angle=swiftshader",
                "--enable-unsafe-swiftshader", *NO_NETWORK_ARGS, "--window-size=1280,800",
                f"--user-data-dir={tmp_path / 'profile'}"):
        opts.add_argument(arg)
    shot = tmp_path / "viewer.png"

    def colours() -> int:
        return len(np.unique(imageio.imread(shot)[..., :3].reshape(-1, 3), axis=0))

    driver = None
    try:
        deadline = time.monotonic() + 30
        while not _listening(web) and time.monotonic() < deadline:
            time.sleep(0.2)
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
        driver.get(f"http://127.0.0.1:{web}/?url=rerun%2Bhttp%3A%2F%2F127.0.0.1%3A{grpc}%2Fproxy&renderer=webgl")
        # The wasm viewer starts and the recording streams in on a software rasteriser:
        # poll the screenshot instead of sleeping for the slowest case.
        deadline = time.monotonic() + 90
        while True:
            try:
                assert driver.save_screenshot(str(shot))
            except TimeoutException:
                # The software rasteriser kept the page busy past chromedriver's 10 s for a
                # screenshot (a loaded machine): not rendered yet, ask again.
                if time.monotonic() > deadline:
                    raise
                continue
            # A rendered viewer (panels, camera images, plots), not a blank or error page.
            if colours() > 500 or time.monotonic() > deadline:
                break
            time.sleep(2)
    finally:
        if driver is not None:
            driver.quit()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(10)
    assert colours() > 500
    (run / "viewer.png").write_bytes(shot.read_bytes())
