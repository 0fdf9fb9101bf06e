"""`labference audit`, `labference videos`, `labference demos-from-bags` and `labference demos`."""
from __future__ import annotations

import sys

import click


def _fail(message: str, code: int = 2):
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


@click.command()
@click.argument("path", type=click.Path())
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Episodes audited at once (one process each).")
@click.option("--debug", is_flag=True, help="Show a traceback on unexpected errors.")
def audit(path: str, jobs: int, debug: bool) -> None:
    """Replay-audit BAG_OR_RUN_DIR: rebuild events and scores from the bag with the
    online scorer and compare them with the online records.

    Every bag's bytes are checked first (MCAP CRCs, and a closed bag's messages
    against the counts its metadata.yaml records). A bag whose writer was killed
    (no footer, no metadata.yaml) is read up to its last complete record and
    compared up to where it ends (`labference recover-bag` rewrites it closed).

    Exit 0: agree, every scored input of the whole episode compared; 1: disagree
    (report names record, field, online vs audit); 2: a bag or its records cannot
    be read, or a bag was altered (bytes failing a CRC, messages its metadata
    counts missing: the report names them); 3: partial, agrees as far as the
    evidence goes (the bag ends before the episode did: a killed recorder, a
    recovered bag, an interrupted episode). Several episodes: the first of
    1, 2, 3 present."""
    from labference_ros.recording.audit import audit_path, exit_code, format_report
    from labference_ros.recording.bag_reader import BagError

    try:
        results = audit_path(path, jobs=jobs)
    except BagError as exc:
        _fail(str(exc))
    except Exception as exc:  # never a traceback for a user's bag unless asked
        if debug:
            raise
        _fail(f"{path}: audit failed: {type(exc).__name__}: {exc}")
    click.echo(format_report(results))
    sys.exit(exit_code(results))


@click.command()
@click.argument("bag", type=click.Path())
@click.option("--out", "out_dir", type=click.Path(), default=None,
              help="Output directory (default: <episode dir>/videos).")
def videos(bag: str, out_dir: str | None) -> None:
    """Write one MP4 per camera stream of an episode BAG (file names carry the episode id)."""
    from labference_ros.recording.bag_reader import BagError, resolve_bag
    from labference_ros.recording.videos import write_videos

    try:
        bag_dir = resolve_bag(bag)
        written = write_videos(bag_dir, out_dir or bag_dir.parent / "videos")
    except BagError as exc:
        _fail(str(exc))
    if not written:
        _fail(f"{bag}: no camera images in the bag", 1)
    for cam, (p, n) in written.items():
        click.echo(f"{cam}: {p} ({n} frames)")


FORMATS = click.Choice(["hdf5", "lerobot"])
FORMAT_HELP = ("hdf5: demonstrations.hdf5 + manifest + training index in <out>; lerobot: a LeRobot v3.0 "
               "dataset (parquet frames, mp4 videos, meta/) in <out>/lerobot. Repeat for both.")


@click.command()
@click.argument("episode_dir", type=click.Path(exists=True))
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="Output .rrd file (default: EPISODE_DIR/view.rrd).")
def view(episode_dir: str, out_path: str | None) -> None:
    """Turn one recorded episode (its directory or bag) into a Rerun recording to scrub:
    cameras, joint positions, the balance reading, referee events and verdicts on one
    sim-time timeline. Open it with `rerun FILE.rrd` (the viewer comes with rerun-sdk)."""
    from labference_ros.recording.bag_reader import BagError
    from labference_ros.recording.viewer import write_recording

    try:
        path, counts = write_recording(episode_dir, out_path)
    except BagError as exc:
        _fail(str(exc))
    if not counts:
        _fail(f"{episode_dir}: the bag holds nothing to show", 1)
    click.echo(f"wrote {path}: {sum(counts.values())} entries on {len(counts)} streams")
    click.echo(f"open it with: rerun {path}")


def _notes_by_episode(attempts: list[dict]) -> dict[str, list[str]]:
    return {a["episode_id"]: a["notes"] for a in attempts if a.get("notes")}


@click.command("demos-from-bags")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", type=click.Path(), default=None, help="Output directory (default: RUN_DIR/demos).")
@click.option("--val-fraction", default=0.1, show_default=True, help="Share of accepted episodes in the val split.")
@click.option("--format", "formats", type=FORMATS, multiple=True, default=("hdf5",), show_default=True,
              help=FORMAT_HELP)
def demos_from_bags(run_dir: str, out_dir: str | None, val_fraction: float, formats=("hdf5",)) -> None:
    """Convert every episode bag + records under RUN_DIR into HDF5 demonstrations,
    a collection manifest and a training index, and/or a LeRobot dataset."""
    import pathlib

    from labference_ros.recording.bag_reader import BagError

    out = pathlib.Path(out_dir) if out_dir else pathlib.Path(run_dir) / "demos"
    notes: dict[str, list[str]] = {}
    if "hdf5" in formats:
        from labference_ros.recording.demos import convert_run

        try:
            summary = convert_run(pathlib.Path(run_dir), out, val_fraction)
        except BagError as exc:
            _fail(str(exc))
        click.echo(f"{summary['hdf5']}: {summary['episodes']} episodes, {summary['accepted']} accepted "
                   f"({summary['failed']} failed attempts kept in {summary['manifest']})")
        click.echo(f"training index: {summary['index']}")
        notes.update(_notes_by_episode(summary["attempts"]))
    if "lerobot" in formats:
        from labference_ros.recording.lerobot import ExportError, export_run

        try:
            summary = export_run(pathlib.Path(run_dir), out / "lerobot", overwrite=True)
        except (BagError, ExportError) as exc:
            _fail(str(exc))
        click.echo(f"{summary['dataset']}: LeRobot v3.0 dataset, {summary['episodes']} episodes, "
                   f"{summary['frames']} frames at {summary['fps']} fps "
                   f"({len(summary['attempts']) - summary['episodes']} attempts not accepted)")
        notes.update(_notes_by_episode(summary["attempts"]))
    for episode, episode_notes in notes.items():  # the same steps feed both formats: said once
        for note in episode_notes:
            click.echo(f"note: {episode}: {note}")


@click.command()
@click.option("--system", default="scripted_expert", show_default=True, help="Tested system that demonstrates.")
@click.option("--episodes", default=3, show_default=True, help="Number of episodes to record.")
@click.option("--condition", default="basic", show_default=True, type=click.Choice(["basic", "extended"]))
@click.option("--seed", default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(), default="runs/demos-{timestamp}", show_default=True,
              help="Run directory; the HDF5 file, manifest and index go to <out>/demos.")
@click.option("--val-fraction", default=0.1, show_default=True, help="Share of accepted episodes in the val split.")
@click.option("--format", "formats", type=FORMATS, multiple=True, default=("hdf5",), show_default=True,
              help=FORMAT_HELP)
def demos(system: str, episodes: int, condition: str, seed: int, out_dir: str, val_fraction: float,
          formats=("hdf5",)) -> None:
    """Record N episodes of a system through the weighing graph (rosbags on), then
    convert them into HDF5 demonstrations and/or a LeRobot dataset (demos-from-bags)."""
    import pathlib
    import time

    from labference_ros.launcher.launch import launch as run_launch

    out = pathlib.Path(out_dir.replace("{timestamp}", time.strftime("%Y%m%d-%H%M%S")))
    code = run_launch("weighing_sim.launch.py", (f"system:={system}", f"episodes:={episodes}",
                                                 f"condition:={condition}", f"seed:={seed}", "record:=true",
                                                 f"output_dir:={out}"))
    if code != 0:
        _fail(f"the recording run ended with exit status {code}; see {out}", code)
    demos_from_bags.callback(str(out), None, val_fraction, formats)


@click.command("recover-bag")
@click.argument("bag", type=click.Path(exists=True))
def recover_bag(bag: str) -> None:
    """Rewrite the unclosed episode BAG of a killed recorder as a closed rosbag2 bag.

    Every complete record is kept; the original directory stays beside it as
    <bag>.unclosed. Exit 0: rewritten; 2: not an unclosed bag, or unreadable."""
    from labference_ros.recording.bag_reader import BagError, resolve_bag
    from labference_ros.recording.mcap_recover import IntegrityError, recover_bag as rewrite

    try:
        closed, kept, what = rewrite(resolve_bag(bag))
    except (BagError, IntegrityError) as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"{bag}: cannot rewrite: {exc}")
    click.echo(f"{closed}: closed bag written ({what})")
    click.echo(f"original kept in {kept}")


COMMANDS = (audit, videos, view, demos_from_bags, demos, recover_bag)
