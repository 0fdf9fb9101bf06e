"""`labference sim-real`: simulated and real runs matched by instance (core/ppi.py on records)."""
import json

import numpy as np
from click.testing import CliRunner

from labference_ros.cli.main import main
from synthetic import episode, write_output_dir


def test_sim_real_command_pairs_runs_by_instance(tmp_path):
    rng = np.random.default_rng(3)
    sim_ok = rng.random(60) < 0.8
    real_ids = range(0, 60, 3)  # every third instance also ran on the rig
    write_output_dir(tmp_path / "sim", [episode(f"s{k}", chosen="std_50" if sim_ok[k] else "std_10",
                                                run_kw={"iid": f"i{k}"}) for k in range(60)])
    write_output_dir(tmp_path / "real", [episode(f"r{k}", chosen="std_50" if sim_ok[k] and k % 2 else "std_10",
                                                 run_kw={"iid": f"i{k}"}) for k in real_ids])
    res = CliRunner().invoke(main, ["sim-real", str(tmp_path / "sim"), str(tmp_path / "real"), "--json"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.output)
    assert r["n_real"] == 20 and r["n_sim_only"] == 40 and r["method"] == "ppi++"
    assert r["real_successes"] == sum(1 for k in real_ids if sim_ok[k] and k % 2)
    write_output_dir(tmp_path / "real2", [episode("x", run_kw={"iid": "nosim"})])
    bad = CliRunner().invoke(main, ["sim-real", str(tmp_path / "sim"), str(tmp_path / "real2")])
    assert bad.exit_code == 1 and "no simulated result" in bad.output
