"""Feedback weighing against the simulator: the one description of its graph.

launch/weighing_sim.launch.py is generated from this file
(python -m labference_ros.graphs.launchgen) and the embedded launcher
(`labference launch weighing_sim.launch.py`) starts the same nodes.
"""
from __future__ import annotations

import dataclasses

from labference_ros.core.rates import CAMERA_RATE_HZ
from labference_ros.skills.safety_modes import SAFETY_MODES

from .graph import Graph, LaunchArgument, NodeSpec, Param

ARGUMENTS = (
    LaunchArgument("episodes", "3", "Number of instances to generate and evaluate "
                   "(ignored when 'instances' is given: that list runs in full)"),
    LaunchArgument("system", "scripted_expert", "Tested system (policy registry name): scripted_expert, "
                   "display_reader, fixed_preference, http, openpi, agent"),
    LaunchArgument("system_params", "{}", "The tested system's parameters as JSON, e.g. "
                   "'{\"preference\": \"std_20\"}' or, for system:=http, '{\"url\": \"http://127.0.0.1:8000\"}' "
                   "(the server's base URL: the client posts to url + act_path, default /act, and "
                   "url + reset_path, default /reset)"),
    LaunchArgument("agent_url", "", "system:=agent: base URL of an OpenAI-compatible chat-completions server"),
    LaunchArgument("agent_model", "", "system:=agent: model name"),
    LaunchArgument("condition", "basic", "Task condition of generated instances", choices=("basic", "extended")),
    LaunchArgument("seed", "0", "Base seed of the task, layout and policy streams"),
    LaunchArgument("support", "none", "Full-rollout Oracle support, mode:site joined by '+', e.g. "
                   "'replace:state' or 'assist:state+replace:decision' (assist|replace at state and decision, "
                   "assist at geometry); none = the base system"),
    LaunchArgument("output_dir", "runs/{timestamp}", "Run directory; {timestamp} is replaced at start"),
    LaunchArgument("camera_rate", f"{CAMERA_RATE_HZ:g}", "Camera publishing rate in Hz of sim time"),
    LaunchArgument("image_width", "320", "Camera image width in pixels (all cameras)"),
    LaunchArgument("image_height", "240", "Camera image height in pixels (all cameras)"),
    LaunchArgument("step_mode", "sync", "sync: physics pauses while the policy thinks; realtime: it does not",
                   choices=("sync", "realtime")),
    LaunchArgument("record", "true", "Record every episode as a rosbag2 (MCAP) with camera videos",
                   choices=("true", "false")),
    LaunchArgument("instances", "", "Optional path to an instance-list JSON file (core.instances format)"),
    LaunchArgument("deadline_s", "60", "Sim seconds per episode before it is stopped with reason 'deadline'"),
    LaunchArgument("free_space_check", "true", "Refuse to start when the output directory's file system has less "
                   "free space than the run's estimated size (from record, image size, camera_rate, deadline_s "
                   "and episodes; `labference launch` only)", choices=("true", "false")),
    LaunchArgument("monitor", "false", "Start the monitor node for RViz (rviz/weighing.rviz): /robot_description, "
                   "/tf from joint states and /referee/markers; recorded in the bag too",
                   choices=("true", "false")),
    LaunchArgument("safety", "none", "franka: the policy bridge rejects any chunk that exceeds the Panda's joint "
                   "velocity or acceleration limits or takes the fingertips out of the cell's workspace box "
                   "(the arm holds; the chunk record names the violation); fr3, panda: that robot's limits, "
                   "between rows too, and no contact of arm or hand with the cell's fixtures; "
                   "none: the ActionSpec check only",
                   choices=SAFETY_MODES),
    LaunchArgument("service_timeout_s", "30", "Wall seconds to wait for a service to appear or answer "
                   "(discovery can take seconds)"),
)

# Topic names are absolute and fixed in the nodes (README, "Topics and services"):
# the arm and gripper commands use the ros2_control controller topic names, so a
# real robot's controllers can take the simulator's place. No node uses ROS time
# (use_sim_time stays false): in sync mode physics advances only when the policy
# bridge asks, so timers on /clock would wait for themselves. Sim time travels in
# message stamps instead.
TASK = "feedback_weighing"  # the task family (labference_ros.tasks) every task-aware node loads

# lab_sim and the balance share one process (`labference launch`; graphs/graph.py):
# every 10 ms wrench, and the reading lab_sim's display shows, stay in it. The graph's
# CPU per sim second fell by about a tenth (docs/benchmark-history/
# 2026-11-30_to_2026-12-06.md, "lab_sim and the balance in one process"). The readings then leave through lab_sim's shared-memory segment beside
# the frames, where one can be lost and resent seconds later: the referee's finish waits
# for it (docs/records.md, "A finish waits for the measurements still in flight").
SIM_PROCESS = "sim"
NODES = (
    NodeSpec("lab_sim", "lab_sim",
             parameters={"step_mode": Param("step_mode"), "camera_rate": Param("camera_rate", float),
                         "image_width": Param("image_width", int), "image_height": Param("image_height", int)},
             process=SIM_PROCESS),
    NodeSpec("balance", "balance",
             parameters={"history": 2000}, process=SIM_PROCESS),
    NodeSpec("referee", "referee",
             parameters={"task": TASK}),
    NodeSpec("policy_bridge", "policy_bridge",
             parameters={"system": Param("system"), "system_params_json": Param("system_params"),
                         "agent_url": Param("agent_url"), "agent_model": Param("agent_model"),
                         "step_mode": Param("step_mode"), "camera_rate": Param("camera_rate", float),
                         "support": Param("support"), "task": TASK, "safety": Param("safety")}),
    # Idle unless `support` names one: binds support to each opportunity the referee opens.
    NodeSpec("oracle", "oracle", parameters={"condition": Param("support"), "task_condition": Param("condition")}),
    NodeSpec("recorder", "recorder", parameters={"task": TASK, "enabled": Param("record", bool)}),
    # RViz's inputs (robot description, tf, referee markers); evaluator-side.
    NodeSpec("monitor", "monitor", parameters={}, when="monitor"),
    NodeSpec("episode_runner", "episode_runner",
             parameters={"episodes": Param("episodes", int), "system": Param("system"),
                         "condition": Param("condition"), "seed": Param("seed", int),
                         "output_dir": Param("output_dir"), "instances": Param("instances"),
                         "deadline_s": Param("deadline_s", float), "step_mode": Param("step_mode"),
                         "camera_rate": Param("camera_rate", float),
                         "service_timeout_s": Param("service_timeout_s", float),
                         "record": Param("record", bool), "support": Param("support"), "task": TASK,
                         "image_width": Param("image_width", int), "image_height": Param("image_height", int)},
             ends_graph=True),
)

# The simulator alone runs the hidden-event condition (its ready lamp is lab_sim's environment
# transition) and the held-out binding (a real cell would need the block standards): the other
# graphs share ARGUMENTS as they are.
SIM_ARGUMENTS = tuple(dataclasses.replace(
    a, description="Task condition of generated instances (hidden_event: basic, started only once the "
                   "balance's ready lamp lights at a hidden time; heldout_blocks: basic's instances with the "
                   "held-out standards, square blocks of the same masses)",
    choices=(*a.choices, "hidden_event", "heldout_blocks"))
    if a.name == "condition" else a for a in ARGUMENTS)

GRAPH = Graph(name="weighing_sim", package="labference",
              description="Feedback weighing in simulation: simulator, balance, referee, policy bridge, episode runner",
              arguments=SIM_ARGUMENTS, nodes=NODES, task=TASK)
