"""`labference operator confirm|pause|resume`: the operator's steps on a real cell.

The real launch's episode runner (confirm:=operator) starts an episode only after its
scene check passed and an operator confirmed through /episode_runner/confirm; `confirm`
is that confirmation from a terminal on the evaluation PC (the launch's ROS_DOMAIN_ID
exported). `pause` and `resume` stop the arm and let the system go on in the running
episode (/episode_runner/pause, passed on to /policy_bridge/pause). The runner records
each with its time in the episode's operator.jsonl (docs/records.md)."""
from __future__ import annotations

import getpass
import os
import sys
import time

import click

CONFIRM_SERVICE = "/episode_runner/confirm"
PAUSE_SERVICE = "/episode_runner/pause"
EXIT_DONE, EXIT_REFUSED, EXIT_NO_RUNNER = 0, 1, 2


def ask_runner(service: str, make_request, timeout_s: float) -> tuple[int, str]:
    """Call one of the runner's services; (exit code, the line to print).
    `make_request(srv)`: the request, given the labference.srv module."""
    import labference.srv as srv

    from labference_ros.nodes.runtime import init_ros

    kind = srv.OperatorConfirm if service == CONFIRM_SERVICE else srv.SetPause
    rclpy = init_ros([])
    node = rclpy.create_node("labference_operator")
    try:
        client = node.create_client(kind, service)
        if not client.wait_for_service(timeout_sec=timeout_s):
            domain = os.environ.get("ROS_DOMAIN_ID", "unset")
            return EXIT_NO_RUNNER, (f"no episode runner answers {service} within {timeout_s:g} s "
                                    f"(ROS_DOMAIN_ID={domain}: export the launch's)")
        future = client.call_async(make_request(srv))
        deadline = time.monotonic() + timeout_s
        while not future.done() and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.1)
        if not future.done():
            return EXIT_NO_RUNNER, f"{service} did not answer within {timeout_s:g} s"
        answer = future.result()
        return (EXIT_DONE if answer.success else EXIT_REFUSED), answer.message
    finally:
        node.destroy_node()
        rclpy.shutdown()


def _who(operator_name: str) -> str:
    try:
        return operator_name or getpass.getuser()
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        return "operator"


def _finish(code: int, line: str) -> None:
    click.echo(line, err=code != EXIT_DONE)
    sys.exit(code)


def _check_timeout(timeout_s: float) -> None:
    if timeout_s <= 0:
        raise click.BadParameter("must be positive", param_hint="--timeout")


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
    _check_timeout(timeout_s)
    who = _who(operator_name)
    _finish(*ask_runner(CONFIRM_SERVICE, lambda srv: srv.OperatorConfirm.Request(episode_id=episode_id,
                                                                                 operator_name=who), timeout_s))


def _pause_command(pause: bool):
    verb = "pause" if pause else "resume"
    what = ("Stop the arm in the running episode: the rows not yet sent are dropped, the arm comes to rest, "
            "and the system is not asked to act until resumed." if pause else
            "Let the system go on in the running episode after a pause.")

    @operator_group.command(verb, help=what + "\n\nExit 0 asked of the policy bridge, 1 refused (no episode "
                            "running), 2 no episode runner answered.")
    @click.option("--reason", default="", help="Why, as recorded (default: none given).")
    @click.option("--operator", "operator_name", default="", help="Who, as recorded (default: the login name).")
    @click.option("--episode", "episode_id", default="", help="The episode meant (default: the running one).")
    @click.option("--timeout", "timeout_s", type=float, default=10.0, show_default=True,
                  help="Seconds to wait for the episode runner.")
    def command(reason: str, operator_name: str, episode_id: str, timeout_s: float) -> None:
        _check_timeout(timeout_s)
        said = f"operator {_who(operator_name)}" + (f": {reason}" if reason else "")
        _finish(*ask_runner(PAUSE_SERVICE, lambda srv: srv.SetPause.Request(episode_id=episode_id, pause=pause,
                                                                             reason=said), timeout_s))

    return command


_pause_command(True)
_pause_command(False)


COMMANDS = (operator_group,)
