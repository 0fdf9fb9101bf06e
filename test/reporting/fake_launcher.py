"""Stand-in for `labference launch weighing_sim.launch.py key:=value ...` (no simulator).

Writes <output_dir>/episodes/<id>/{run.json,scores.json} for each instance of
the given list. Environment knobs:
  FAKE_LAUNCH_LOG   file to append each launched instance id to
  FAKE_ERROR_IDS    comma list: write scores.json with a stop reason, not "final"
  FAKE_KILL_AT      instance id: write its run.json, then SIGKILL the campaign (parent) and die
  FAKE_WRONG_IDS    comma list: a wrong first choice (FAIL)
  FAKE_WRONG_ARMS   comma list of campaign arm ids (the output dir's parent): every choice wrong (FAIL)
  FAKE_HANG_IDS     comma list: write its run.json and <FAKE_PID_DIR>/<id>.pid, then wait to be killed
  FAKE_EPISODE_S    seconds each episode takes (default 0), so concurrent chunks overlap
  FAKE_BARRIER_DIR  directory: each launcher marks its start there, then waits (up to FAKE_BARRIER_S,
                    default 120, else exit 3) until FAKE_BARRIER_N (default 2) launchers have started,
                    so that many chunks run at the same time by construction
  FAKE_BAG_TEXT     write <episode>/bag/bag.mcap holding this text and the instance id
  FAKE_ENV_LOG      file to append one JSON line per launcher start and end to:
                    {"event": "start"|"end", "attempt": <output_dir>, "env": <its whole environment>}
"""
import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from synthetic import episode  # noqa: E402


def main(argv):
    assert argv[1] == "weighing_sim.launch.py", argv
    args = dict(a.split(":=", 1) for a in argv[2:])
    out = Path(args["output_dir"])
    items = json.loads(Path(args["instances"]).read_text())["instances"]
    errors = set(filter(None, os.environ.get("FAKE_ERROR_IDS", "").split(",")))
    wrong = set(filter(None, os.environ.get("FAKE_WRONG_IDS", "").split(",")))
    if out.parent.name in set(filter(None, os.environ.get("FAKE_WRONG_ARMS", "").split(","))):
        wrong |= {i["instance_id"] for i in json.loads(Path(args["instances"]).read_text())["instances"]}
    kill_at = os.environ.get("FAKE_KILL_AT")
    hang = set(filter(None, os.environ.get("FAKE_HANG_IDS", "").split(",")))
    episode_s = float(os.environ.get("FAKE_EPISODE_S", "0"))
    _env_log("start", out)
    if os.environ.get("FAKE_BARRIER_DIR") and not _barrier(Path(os.environ["FAKE_BARRIER_DIR"]), out.name):
        return 3
    (out / "episodes").mkdir(parents=True, exist_ok=True)
    (out / "instances.json").write_text(json.dumps({"schema": 1, "instances": items}))
    for inst in items:
        iid = inst["instance_id"]
        with open(os.environ["FAKE_LAUNCH_LOG"], "a") as f:
            f.write(iid + "\n")
        eid = f"{out.name}-{iid}"
        ep = episode(eid, chosen="std_10" if iid in wrong else "std_50",
                     status="referee_shutdown" if iid in errors else "final",
                     run_kw={"iid": iid, "system": args["system"], "condition": args["condition"]})
        d = out / "episodes" / eid
        d.mkdir()
        (d / "run.json").write_text(json.dumps(ep["run"]))
        if iid == kill_at:
            os.kill(os.getppid(), signal.SIGKILL)
            os._exit(9)
        if iid in hang:
            pid_file = Path(os.environ["FAKE_PID_DIR"]) / f"{iid}.pid"
            pid_file.with_suffix(".tmp").write_text(str(os.getpid()))
            pid_file.with_suffix(".tmp").rename(pid_file)  # whole, never half-written
            while True:  # mid-episode until something kills us
                time.sleep(1)
        time.sleep(episode_s)
        if os.environ.get("FAKE_BAG_TEXT"):
            (d / "bag").mkdir()
            (d / "bag" / "bag.mcap").write_text(os.environ["FAKE_BAG_TEXT"] + iid)
        (d / "scores.json").write_text(json.dumps(ep["scores"]))
    # core/summary.py shape; the launcher knows wall time but not model usage.
    (out / "summary.json").write_text(json.dumps({"schema": 1, "per_episode": [
        {"episode_id": f"{out.name}-{i['instance_id']}", "instance_id": i["instance_id"], "system": args["system"],
         "condition": args["condition"], "status": "ok", "wall_s": 1.5} for i in items]}))
    _env_log("end", out)
    return 0


def _barrier(directory, name):
    """Mark this launcher started; True once FAKE_BARRIER_N have, False on timeout."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).touch()
    n = int(os.environ.get("FAKE_BARRIER_N", "2"))
    deadline = time.monotonic() + float(os.environ.get("FAKE_BARRIER_S", "120"))
    while len(list(directory.iterdir())) < n:
        if time.monotonic() > deadline:
            print(f"fake launcher: fewer than {n} launchers started at once", file=sys.stderr)
            return False
        time.sleep(0.05)
    return True


def _env_log(event, out):
    if os.environ.get("FAKE_ENV_LOG"):
        line = json.dumps({"event": event, "attempt": str(out), "env": dict(os.environ)}, sort_keys=True) + "\n"
        # One write on an O_APPEND descriptor: concurrent launchers' lines never interleave.
        fd = os.open(os.environ["FAKE_ENV_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
