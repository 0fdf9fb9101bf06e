"""Run records: valid JSON/JSONL, unique event ids, scores.json even on early stop."""
import json
import os

import pytest

from labference_ros.tasks.weighing.contract import weighing_basic
from labference_ros.core.records import RunRecords, read_jsonl, run_info, stop_early
from referee_streams import episode


def _run(tmp_path, stop_at=None):
    ref, w = episode()
    rec = RunRecords(tmp_path, run_info(ref.contract, ref.instance, episode_id="ep"))
    w.outputs = []
    for chunk in (0.3, None):
        if chunk:
            w.run(chunk)
        else:
            w.move("std_50", "pan")
        rec.write_all(w.outputs)
        w.outputs = []
        if stop_at == "early":
            break
    return ref, w, rec


def test_records_are_valid_and_event_ids_unique(tmp_path):
    ref, w, rec = _run(tmp_path)
    w.run(4.0)
    rec.write_all(w.outputs)
    out = ref.finish(w.t)
    rec.write_all(out)
    rec.close()
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["task"]["contract_hash"] == weighing_basic().content_hash
    assert run["seeds"] == {"task": 1, "layout": 2, "policy": 3}
    events = read_jsonl(tmp_path / "events.jsonl")
    ids = [e["event_id"] for e in events if e["record"] == "event"]
    assert ids and len(ids) == len(set(ids))
    assert {"opportunity", "legal_set", "event"} <= {e["record"] for e in events}
    assert all(r["record"] in ("receipt", "report") for r in read_jsonl(tmp_path / "observations.jsonl"))
    snaps = read_jsonl(tmp_path / "online_scores.jsonl")
    assert snaps and snaps[-1]["record"] == "score_snapshot"
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["status"] == "final" and scores["completion_class"] == "clean"
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_scores_written_on_early_stop(tmp_path):
    ref, w, rec = _run(tmp_path, stop_at="early")
    final = stop_early(rec, ref, w.t, "early_stop")
    rec.close()
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["status"] == "early_stop" and scores["finished"] == "early_stop"
    assert scores["physically_complete"] is False and final["episode_id"] == "ep"
    for line in (tmp_path / "events.jsonl").read_text().splitlines():
        json.loads(line)  # every line complete


def test_duplicate_event_ids_are_refused(tmp_path):
    rec = RunRecords(tmp_path, {})
    e = {"record": "event", "event_id": "x:e1", "t": 0.0, "measured_value": float("nan")}
    rec.write(e)
    with pytest.raises(ValueError):
        rec.write(e)
    rec.close()
    assert json.loads((tmp_path / "events.jsonl").read_text())["measured_value"] is None


def test_lines_are_on_disk_before_close(tmp_path):
    rec = RunRecords(tmp_path, {})
    rec.write({"record": "receipt", "receipt_id": "r1"})
    assert os.path.getsize(tmp_path / "observations.jsonl") > 0
    rec.close()


def test_a_system_that_stops_itself_ends_with_a_final_status():
    from labference_ros.core.records import final_status
    for reason in ("completed", "deadline", "policy_stop", ""):
        assert final_status(reason) == "final", reason
    # The evaluation itself broke off: no measured end, the episode is an ERROR.
    assert final_status("referee_shutdown") == "referee_shutdown"
    assert final_status("superseded") == "superseded"


def test_an_atomic_write_that_fails_names_the_file_it_was_for(tmp_path, monkeypatch):
    """A full disk fails the write or fsync of the hidden temporary file, whose error
    names no file: the error names the file being written (never "None")."""
    import errno
    import os

    from labference_ros.core.records import write_json_atomic

    def full_disk(_fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    target = tmp_path / "summary.json"
    try:
        write_json_atomic(target, {"a": 1})
    except OSError as exc:
        assert exc.errno == errno.ENOSPC and exc.filename == str(target)
        assert f"{exc.filename}" != "None" and "No space left on device" in str(exc)
    else:
        raise AssertionError("the write did not fail")
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind
