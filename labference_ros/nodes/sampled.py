"""Inputs a node reads when it needs them, not whenever a message arrives.

A subscription on a node that no executor spins is never dispatched: DDS still
receives its messages into the reader's history (its QoS depth, newest kept) and
the node takes them with ``newest()``. For a 100 Hz stream read a few times a
second this spares the process a wake-up and a Python callback per message
(benchmarks/bench_delivery.py measures both ways)."""
from __future__ import annotations

NEVER_CALLED = "SampledInput's subscription is not spun; its callback cannot run"


def reader_node(owner, suffix: str = "inputs"):
    """A second node in ``owner``'s process and namespace, named ``<owner>_<suffix>``,
    for SampledInputs: never add it to an executor. It serves nothing (no parameter or
    type description services, which nothing would answer) and logs nothing. Its own
    name remap wins over the process-wide ``__node:=`` the launcher passes; the
    process-wide topic remaps apply to it as to ``owner``."""
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    name = f"{owner.get_name()}_{suffix}"
    return Node(name, context=owner.context, namespace=owner.get_namespace(), enable_rosout=False,
                start_parameter_services=False, cli_args=["--ros-args", "-r", f"__node:={name}"],
                parameter_overrides=[Parameter("start_type_description_service", value=False)])


def _never_called(_data) -> None:
    raise RuntimeError(NEVER_CALLED)


def destroy_reader(owner, attribute: str) -> None:
    """Destroy the reader node ``owner.<attribute>``, if it was made (rclpy also
    destroys a node whose construction failed part way)."""
    reader = getattr(owner, attribute, None)
    if reader is not None:
        reader.destroy_node()
        setattr(owner, attribute, None)


class SampledInput:
    """One subscription read on demand: messages as their serialized bytes (raw) or
    as messages. ``reader`` must be a node that no executor spins (an executor would
    take the messages first)."""

    def __init__(self, reader, msg_type, topic: str, qos, raw: bool = True):
        self.subscription = reader.create_subscription(msg_type, topic, _never_called, qos, raw=raw)

    def take_all_with_info(self) -> list[tuple]:
        """Every message received since the last call with its rclpy MessageInfo
        (source and reception timestamps), oldest first (at most the QoS depth)."""
        sub = self.subscription
        taken_messages = []
        with sub.handle:
            while True:
                taken = sub.handle.take_message(sub.msg_type, sub.raw)
                if taken is None:
                    return taken_messages
                taken_messages.append(taken)

    def take_all(self) -> list:
        """Every message received since the last call, oldest first (at most the QoS depth)."""
        return [message for message, _info in self.take_all_with_info()]

    def newest(self):
        """The newest message received since the last call, or None when none arrived;
        older ones are dropped."""
        taken = self.take_all_with_info()
        return taken[-1][0] if taken else None
