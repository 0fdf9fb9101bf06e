"""A closed loop without ROS that is also scored: the referee core is fed
every observation delivery and a measurement after every hold interval, as
the referee node is in the graph (the same stepping as the Oracle's matched
continuations, oracle/continuation.py, without an Oracle)."""
from __future__ import annotations

from dataclasses import dataclass, field

from labference_ros.core.action_spec import validate_chunk
from labference_ros.tasks.weighing.contract import contract_for
from labference_ros.tasks.weighing.referee import Referee
from labference_ros.oracle.world import World


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
        spec = system.spec
        instruction = instance.public_instruction()
        referee.step(world.measure())
        rejected, last_gripper, finished_at = 0, None, None
        while world.t < budget_s - 1e-9 and not referee.finished:
            oid, obs = world.observe(instruction, referee.z.evidence_version)
            referee.deliver_observation(oid, world.t, session)
            verdict = validate_chunk(spec, system.act(obs, None), 0, 0)
            if not verdict.accepted:
                rejected += 1
            for row in (verdict.applied if verdict.accepted else [None]):
                if row is not None:
                    check = world.backend.set_arm_targets(row[:7])
                    assert check.ok, check.reason
                    g = float(row[spec.gripper_index])
                    if g != last_gripper:
                        c = spec.gripper.command(g)
                        world.backend.set_gripper(c["width"], c["speed"], c["force"], c["epsilon_inner"],
                                                  c["epsilon_outer"], c["grasp"])
                        last_gripper = g
                world.advance(spec.hold_interval_s)
                referee.step(world.measure())
                if referee.finished:
                    break
            if system.finished:
                finished_at = world.t if finished_at is None else finished_at
                if world.t - finished_at >= after_finish_s and not referee.finished:
                    referee.finish(world.t, "policy_done")
        if not referee.finished:
            referee.finish(world.t, "deadline")
        choices = []
        for opp in referee.opportunities:
            op = opp.first_choice
            if op is not None:
                choices.append((opp.id, op.to_dict(), op in opp.legal_set))
        m = world.backend.measure()
        on_pan = frozenset(n for n, o in m.objects.items() if n.startswith("std_") and "pan" in o.contacts)
        return RefereedEpisode(instance, bool(referee.z.physically_complete), choices, rejected, on_pan,
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
