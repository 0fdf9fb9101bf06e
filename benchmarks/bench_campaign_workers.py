"""Campaign throughput through a Dask scheduler with shipped results: episodes per
second on 1 and on 2 workers, side by side in one run, and their ratio.

The launcher is test/reporting/fake_launcher.py (each episode sleeps
--episode-s, writes its records), so the figure is the harness's own: chunk
dispatch, the worker's lock check and private directory, the result's tar
coming back and being merged. With --real the launcher is `labference launch`
(scripted_expert episodes through the whole graph), which needs a quiet machine.

    .venv/bin/python benchmarks/bench_campaign_workers.py [--episodes 12] [--chunk-size 2] [--episode-s 0.5] [--real]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from labference_ros.campaign.lock import build_lock, read_lock, write_lock
from labference_ros.campaign.runner import run_campaign

REPO = Path(__file__).resolve().parents[1]
FAKE = [sys.executable, str(REPO / "test" / "reporting" / "fake_launcher.py")]
BIN = Path(sys.executable).parent


def _lock(tmp: Path, episodes: int, chunk_size: int, real: bool) -> dict:
    if real:
        from labference_ros.tasks.weighing.instances import generate

        items = [json.loads(i.to_json()) for i in generate("basic", episodes, task_seed=0, layout_seed=0,
                                                             policy_seed=0)]
    else:
        items = [{"instance_id": f"i{k}", "condition": "basic"} for k in range(episodes)]
    if real:  # a lock takes certified instances only: the reference program solves each first
        from labference_ros.campaign.certify import certify_population

        (tmp / "list.json").write_text(json.dumps({"schema": 1, "instances": items}))
        certify_population(tmp / "list.json", task="feedback_weighing")
    else:  # the fake launcher's stand-ins, with matching stand-in certificates
        sys.path.insert(0, str(REPO / "test" / "reporting"))
        from certified import certified_list

        (tmp / "list.json").write_text(json.dumps(certified_list(items)))
    arm = {"id": "00-scripted_expert-basic", "system": "scripted_expert", "condition": "basic",
           "instances": "list.json"}
    if real:
        arm["args"] = {"record": "false"}
    spec = {"name": "bench", "output_dir": "runs", "chunk_size": chunk_size, "arms": [arm]}
    (tmp / "spec.yaml").write_text(yaml.safe_dump(spec))
    return read_lock(write_lock(build_lock(tmp / "spec.yaml"), tmp / "spec.lock.json"))


def _cluster(tmp: Path, workers: int) -> tuple[list[subprocess.Popen], str]:
    sched_file = tmp / f"scheduler-{workers}.json"
    procs = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(sched_file)], stderr=subprocess.DEVNULL)]
    while not sched_file.exists():
        time.sleep(0.1)
    procs.append(subprocess.Popen([str(BIN / "dask"), "worker", "--scheduler-file", str(sched_file), "--nworkers",
                                   str(workers), "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard",
                                   "--local-directory", str(tmp / f"workers-{workers}")], stderr=subprocess.DEVNULL))
    address = json.loads(sched_file.read_text())["address"]
    from distributed import Client

    with Client(address) as client:
        client.wait_for_workers(workers, timeout=300)
    return procs, address


def run(workers: int, args) -> float:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        lock = _lock(tmp, args.episodes, args.chunk_size, args.real)
        os.environ["FAKE_LAUNCH_LOG"] = str(tmp / "launched.txt")
        procs, address = _cluster(tmp, workers)
        try:
            t0 = time.monotonic()
            cov = run_campaign(lock, None if args.real else FAKE, log=lambda *_: None, scheduler=address)
            wall = time.monotonic() - t0
        finally:
            for p in reversed(procs):
                p.terminate()
            for p in procs:
                p.wait(60)
        if not cov["complete"]:
            raise SystemExit(f"{workers} worker(s): campaign incomplete: {cov}")
        return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=12)
    ap.add_argument("--chunk-size", type=int, default=2)
    ap.add_argument("--episode-s", type=float, default=0.5)
    ap.add_argument("--real", action="store_true")
    args = ap.parse_args()
    os.environ["FAKE_EPISODE_S"] = str(args.episode_s)
    walls = {n: run(n, args) for n in (1, 2)}
    for n, wall in walls.items():
        print(f"{n} worker(s): {args.episodes} episodes in {wall:.2f} s wall, {args.episodes / wall:.2f} episodes/s")
    print(f"speed-up 2 workers over 1: {walls[1] / walls[2]:.2f}")


if __name__ == "__main__":
    main()
