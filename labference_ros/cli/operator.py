"""`labference operator confirm`: the operator's "hands clear" for the episode that waits.

The real launch's episode runner (confirm:=operator) starts an episode only after its
scene check passed and an operator confirmed through /episode_runner/confirm; this
command is that confirmation from a terminal on the evaluation PC (the launch's
ROS_DOMAIN_ID exported). The runner records it with its time in the episode's
operator.jsonl (docs/records.md)."""
from __future__ import annotations

import getpass
import os
import sys
import time

import click

CONFIRM_SERVICE = "/episode_runner/confirm"
EXIT_CONFIRMED, EXIT_REFUSED, EXIT_NO_RUNNER = 0, 1, 2


def confirm(episode_id: str, operator: str, timeout_s: float) -> tuple[int, str]:
    """Ask the runner; (exit code, the line to print)."""
    from labference.srv import OperatorConfirm

    from labference_ros.nodes.runtime import init_ros

    rclpy = init_ros([])
    node = rclpy.create_node("labference_operator")
    try:
        client = node.create_client(OperatorConfirm, CONFIRM_SERVICE)
        if not client.wait_for_service(timeout_sec=timeout_s):
            domain = os.environ.get("ROS_DOMAIN_ID", "unset")
            return EXIT_NO_RUNNER, (f"no episode runner answers {CONFIRM_SERVICE} within {timeout_s:g} s "
                                    f"(ROS_DOMAIN_ID={domain}: export the launch's)")
        future = client.call_async(OperatorConfirm.Request(episode_id=episode_id, operator_name=operator))
        deadline = time.monotonic() + timeout_s
        while not future.done() and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.1)
        if not future.done():
            return EXIT_NO_RUNNER, f"{CONFIRM_SERVICE} did not answer within {timeout_s:g} s"
        answer = future.result()
        return (EXIT_CONFIRMED if answer.success else EXIT_REFUSED), answer.message
    finally:
        node.destroy_node()
        rclpy.shutdown()


@click.group("operator")
def operator_group() -> None:
    """The operator's steps on a real cell (weighing_real.launch.py, confirm:=operator)."""


@operator_group.command("confirm")
@click.option("--episode", "episode_id", default="", help="The episode meant (default: whichever waits).")
@click.option("--operator", "operator_name", default="", help="Who confirms, as recorded (default: the login name).")
@click.option("--timeout", "timeout_s", type=float, default=10.0, show_default=True,
              help="Seconds to wait for the episode runner.")
def confirm_command(episode_id: str, operator_name: str, timeout_s: float) -> None:
    """Confirm that the scene is set up and hands are clear: the waiting episode starts.

    Exit 0 confirmed, 1 refused (no episode waits: its scene check has not passed,
    or another episode waits), 2 no episode runner answered."""
    if timeout_s <= 0:
        raise click.BadParameter("must be positive", param_hint="--timeout")
    try:
        who = operator_name or getpass.getuser()
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        who = "operator"
    code, line = confirm(episode_id, who, timeout_s)
    click.echo(line, err=code != EXIT_CONFIRMED)
    sys.exit(code)


COMMANDS = (operator_group,)
