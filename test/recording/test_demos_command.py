"""`labference demos` records episodes through the graph and converts them to HDF5."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

LABFERENCE = os.path.join(os.path.dirname(sys.executable), "labference")


@pytest.mark.slow
def test_demos_command_writes_hdf5_whose_observations_precede_their_actions(tmp_path):
    out = tmp_path / "demos_run"
    proc = subprocess.run([LABFERENCE, "demos", "--system", "scripted_expert", "--episodes", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    manifest = json.loads((out / "demos" / "collection_manifest.json").read_text())
    (attempt,) = manifest["attempts"]
    assert attempt["accepted"] is True and attempt["audit"] != "DISAGREE"
    with h5py.File(out / "demos" / "demonstrations.hdf5", "r") as f:
        ep = f["episodes"][attempt["episode_id"]]
        obs_t, act_t = ep["observation/t"][:], ep["action/t"][:]
        assert len(act_t) > 10 and len(obs_t) == len(act_t) + 1  # ... and the observation after the last action
        assert np.all(obs_t[:-1] <= act_t) and np.all(act_t < obs_t[1:])
        for cam in ("front", "wrist", "display"):
            assert np.all(ep[f"observation/image_stamps/{cam}"][:] <= obs_t + 1e-9)
        assert "scores_json" in f["diagnostics"][attempt["episode_id"]]
