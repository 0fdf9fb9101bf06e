"""A closed loop without ROS that is also scored: the referee core is fed
every observation delivery and a measurement after every hold interval, as
the referee node is in the graph: the Oracle's run_in_world (the graph's
episode loop, core.episode_loop) without an Oracle."""
from __future__ import annotations

from dataclasses import dataclass, field

from labference_ros.oracle.continuation import run_in_world
from labference_ros.oracle.world import World
from labference_ros.tasks.weighing.contract import contract_for
from labference_ros.tasks.weighing.referee import Referee


@dataclass
class RefereedEpisode:
    instance: object
    completed: bool
    first_choices: list = field(default_factory=list)  # (opportunity id, operation dict, legal?)
    rejected_chunks: int = 0
    final_on_pan: frozenset = frozenset()
    decisions: list = field(default_factory=list)
    scores: dict = field(default_factory=dict)

    @property
    def all_first_choices_legal(self) -> bool:
        return all(legal for _, _, legal in self.first_choices)


def run_refereed_episode(system, instance, budget_s: float = 60.0, after_finish_s: float = 4.0) -> RefereedEpisode:
    if system.privileged:
        raise ValueError("the refereed loop runs non-privileged systems only")
    world = World(instance)
    try:
        referee = Referee(contract_for(instance.condition), instance, episode_id=instance.instance_id,
                          deadline_s=budget_s)
        session = f"session-{instance.instance_id}"
        system.reset(session, instance.policy_seed)
        referee.step(world.measure())
        rejected = []

        def count_rejected(entry):
            if entry["record"] == "chunk" and entry["status"] not in ("accepted", "clipped"):
                rejected.append(entry["chunk_id"])

        run_in_world(system, world, referee, session=session, deadline_t=budget_s, stop_hold_s=after_finish_s,
                     record=count_rejected)
        choices = []
        for opp in referee.opportunities:
            op = opp.first_choice
            if op is not None:
                choices.append((opp.id, op.to_dict(), op in opp.legal_set))
        m = world.backend.measure()
        on_pan = frozenset(n for n, o in m.objects.items() if n.startswith("std_") and "pan" in o.contacts)
        return RefereedEpisode(instance, bool(referee.z.physically_complete), choices, len(rejected), on_pan,
                               list(system.decisions), referee.scores(world.t))
    finally:
        system.close()
        world.close()


def main(argv=None) -> int:
    """Measure a system over a generated seed list, one line per episode:
    .venv/bin/python test/policies/refereed_loop.py display_reader extended 8 0"""
    import argparse
    import os

    os.environ.setdefault("MUJOCO_GL", "egl")
    from labference_ros.tasks.weighing.instances import generate
    from labference_ros.policies import make

    ap = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    ap.add_argument("system")
    ap.add_argument("condition", choices=("basic", "extended"))
    ap.add_argument("episodes", type=int)
    ap.add_argument("seed", type=int, help="task, layout and policy seed, as the graph's seed:=")
    args = ap.parse_args(argv)
    completed = legal = choices = 0
    for inst in generate(args.condition, args.episodes, args.seed, args.seed, args.seed):
        r = run_refereed_episode(make(args.system), inst)
        completed += r.completed
        choices += len(r.first_choices)
        legal += sum(ok for _, _, ok in r.first_choices)
        ops = " ".join(f"{c['type']}({c['object']}){'' if ok else '!'}" for _, c, ok in r.first_choices)
        print(f"{inst.instance_id} complete={r.completed} first_choices: {ops}", flush=True)
    print(f"completed {completed}/{args.episodes}; legal first choices {legal}/{choices}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
