"""The `labference` console script."""
from __future__ import annotations

import os
import sys

import click

from labference_ros import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="labference")
def main() -> None:
    """Labference-ROS: evaluate laboratory robots on whether their next operation
    follows from what physically happened."""


@main.command()
def doctor() -> None:
    """Report ROS distro, RMW, interfaces, MuJoCo, GL backend and what is missing."""
    from labference_ros.cli.doctor import run_doctor

    sys.exit(run_doctor())


@main.command()
def shell() -> None:
    """Open a shell with the environment (rclpy, interfaces, loopback-only DDS)."""
    from labference_ros.rosenv import loopback_environ

    env = loopback_environ()
    venv_bin = os.path.dirname(sys.executable)
    env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = os.path.dirname(venv_bin)
    env["AMENT_PREFIX_PATH"] = os.path.dirname(venv_bin)
    env["PS1"] = "(labference) \\w$ "
    shell_path = env.get("SHELL", "/bin/bash")
    os.execvpe(shell_path, [shell_path, "-i"], env)
