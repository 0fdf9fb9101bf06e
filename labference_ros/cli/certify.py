"""`labference certify POP [name:=value ...]`: certification before inclusion
(campaign.certify) of an existing population."""
from __future__ import annotations

import os
import sys

import click

ARGUMENTS = {
    "task": "Task family of the population (default: the family whose generator the file names).",
    "system": "Reference program that must solve each instance (default: the family's reference_program).",
    "deadline_s": "Sim seconds of each certification episode (default: the family's graph deadline_s).",
    "cameras": "Cameras whose key frames are kept, comma-separated (default: the family's first camera).",
    "frames": "Folder beside the population file for the key frames (default: certification).",
    "drop_rejected": "true: fix the population without its rejected instances (kept and counted under "
                     "certification.rejected_instances; default false).",
}
HELP_ARGUMENTS = "\n".join(f"  {name}:=VALUE  {text}" for name, text in ARGUMENTS.items())


def parse_arguments(tokens) -> dict[str, str]:
    out = {}
    for token in tokens:
        name, sep, value = token.partition(":=")
        if not sep or not name:
            raise click.UsageError(f"malformed argument {token!r}: expected name:=value")
        if name not in ARGUMENTS:
            raise click.UsageError(f"unknown argument {name!r}; known: {', '.join(ARGUMENTS)}")
        out[name] = value
    return out


@click.command(context_settings={"ignore_unknown_options": True},
               epilog="\b\nArguments (name:=value):\n" + HELP_ARGUMENTS)
@click.argument("pop", type=click.Path(exists=True))
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
def certify(pop: str, arguments) -> None:
    """Certify every instance of POP (an instances.json population file, or the folder
    holding it): the family's reference program runs each instance once in-process
    through the episode loop; every ordered step predicate must hold, every first choice
    be correct and executed, the episode end cleanly, and key frames (PNG, hashed) are
    kept beside it for a visual check. The certificates are written back into POP;
    a campaign lock refuses any instance without a passing one.

    Exit 0: every instance of the population certified (with drop_rejected:=true,
    once the rejected ones are left out); 1: some rejected and still in it (listed
    with the failing step and why), or POP cannot be certified."""
    args = parse_arguments(arguments)
    os.environ.setdefault("MUJOCO_GL", "egl")
    from labference_ros.core.certificates import format_summary
    from labference_ros.campaign.certify import CertificationError, certify_population

    try:
        deadline = float(args["deadline_s"]) if args.get("deadline_s") else None
    except ValueError:
        raise click.UsageError(f"deadline_s:={args['deadline_s']} is not a number") from None
    drop = args.get("drop_rejected", "false").lower()
    if drop not in ("true", "false"):
        raise click.UsageError(f"drop_rejected:={args['drop_rejected']}: expected true or false")

    def progress(cert):
        tail = "" if cert["verdict"] == "certified" else f" at step {cert['failing_step']}: {cert['reason']}"
        click.echo(f"{cert['instance_id']}: {cert['verdict']}{tail}")

    try:
        s = certify_population(pop, task=args.get("task", ""), system_name=args.get("system", ""),
                               deadline_s=deadline,
                               cameras=tuple(c for c in args.get("cameras", "").split(",") if c),
                               frames=args.get("frames") or "certification", progress=progress,
                               drop_rejected=drop == "true")
    except CertificationError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(format_summary(s))
    sys.exit(0 if s["certified"] == s["instances"] - s["dropped"] else 1)


COMMANDS = (certify,)
