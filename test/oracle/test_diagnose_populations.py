"""diagnose_oracle carries the J/K population metrics next to its gain table
(preparation and branches faked: no simulator)."""
from types import SimpleNamespace

from labference_ros.oracle import diagnose
from labference_ros.oracle.continuation import BranchResult
from labference_ros.oracle.supports import condition_name


def _checkpoint(cid, status="verified"):
    instance = SimpleNamespace(instance_id=cid, pair_id="")
    return SimpleNamespace(spec=SimpleNamespace(checkpoint_id=cid, instance=instance), status=status,
                           reason="" if status == "verified" else "not_at_rest:std_10",
                           verified=status == "verified")


def test_diagnose_result_carries_populations_without_changing_the_table(monkeypatch):
    checkpoints = {"c1": _checkpoint("c1"), "c2": _checkpoint("c2"), "c3": _checkpoint("c3", "preparation_failed")}
    monkeypatch.setattr(diagnose, "prepare", lambda spec: checkpoints[spec])

    def run_branch(cp, system, condition, params=None, budget_s=None, records_dir=None, safety="none"):
        cid, name = cp.spec.checkpoint_id, condition_name(condition)
        if not cp.verified:
            return BranchResult(cid, name, "unresolved", reason="preparation_failed")
        supported = name != "base"
        return BranchResult(cid, name, "ok", choice={"type": "add", "object": "std_50", "destination": "pan"},
                            choice_correct=supported or cid == "c1", completed=supported)

    monkeypatch.setattr(diagnose, "run_branch", run_branch)
    result = diagnose.diagnose_oracle(None, "misreader", ["replace:state"], specs=["c1", "c2", "c3"])
    assert set(result) == {"system", "design", "population", "table", "interactions", "branches", "populations"}
    assert result["table"]["replace:state"]["gain_choice_correct"] is None  # c3 unresolved, as before
    assert "replace:state" in diagnose.format_table(result)
    pops = result["populations"]
    # BranchResult does not record evidence delivery or native scorability: J stays empty, not guessed.
    assert pops["J"] == [] and pops["validity"]["membership_unknown"] == ["c1", "c2"]
    assert pops["validity"]["preparation_failed"] == ["c3"]
    done = pops["gains"]["replace:state"]["metrics"]["completed"]
    assert done["N"] == 3 and done["gain"] is None and done["supported"]["bounds"] == [2 / 3, 1.0]
