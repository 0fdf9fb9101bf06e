"""The Mettler-Toledo MT-SICS command set, level 0/1: what the driver sends and
how it reads the replies (pure: text in, values out).

Facts from the MT-SICS reference manuals: commands are upper-case ASCII closed
by CR LF; a reply repeats the command's identifier, then a status character,
then for weight replies the value right-aligned in a 10-character field and the
unit. Status characters: S stable, D dynamic (SI only), A done (zero), I not
executable (busy, or no stability within the balance's timeout), + overload,
- underload. Replies to any command: ES syntax error (command unknown), ET
transmission error, EL logical error (cannot be executed).

Continuous output: SIR ("weight value immediately and repeat") makes the balance
send one S-reply line per weight value, stable (S) or dynamic (D), or S + / S -
while in the overload or underload range, at the rate its UPD setting gives,
until S, SI, SR or @ cancels it. A driver that reads that stream sees every
overload the balance indicates at that rate; one that polls sees only those
that last until its next poll.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

TERMINATOR = b"\r\n"
WEIGHT_FIELD = 10

STABLE, DYNAMIC, DONE, BUSY, OVERLOAD, UNDERLOAD = "S", "D", "A", "I", "+", "-"
GENERAL_ERRORS = {
    "ES": "syntax error: the balance does not know the command",
    "ET": "transmission error: the balance could not read the command",
    "EL": "logical error: the command cannot be executed now",
}
STATUS_MEANING = {
    BUSY: "command not executable (busy, or no stability within the balance's timeout)",
    OVERLOAD: "overload",
    UNDERLOAD: "underload",
}
CONTINUOUS = "SIR"
# Commands that end a balance's continuous output (MT-SICS reference, SIR).
CANCELS_CONTINUOUS = ("S", "SI", "SR", "@")
# Replies that carry another identifier than their command (SI and SIR answer as S).
REPLY_ID = {"SI": "S", "SIR": "S"}
# Grams per unit, for the units a weight reply may carry.
GRAMS_PER_UNIT = {"g": 1.0, "mg": 1e-3, "kg": 1e3}


class ReplyFormatError(ValueError):
    """A line that is no MT-SICS reply to the command sent."""


@dataclass(frozen=True)
class Reply:
    command: str            # the identifier the reply carries ("S", "SI", "Z", "T", "I4")
    status: str             # one status character, or "" for a general error
    value_g: float | None = None  # weight replies with a value, in grams
    unit: str = ""
    text: str = ""          # the rest of the line (identification replies)
    error: str = ""         # "ES" | "ET" | "EL" for a general error

    @property
    def ok(self) -> bool:
        return not self.error and self.status in (STABLE, DYNAMIC, DONE)

    def describe(self) -> str:
        if self.error:
            return f"{self.error} ({GENERAL_ERRORS[self.error]})"
        return f"{self.command} {self.status} ({STATUS_MEANING.get(self.status, 'reply')})"


def encode(command: str) -> bytes:
    if not command or command != command.strip() or any(c in command for c in "\r\n"):
        raise ValueError(f"not an MT-SICS command: {command!r}")
    return command.encode("ascii") + TERMINATOR


def reply_id(command: str) -> str:
    """The identifier a reply to `command` starts with."""
    name = command.split(" ", 1)[0]
    return REPLY_ID.get(name, name)


def format_weight(command: str, status: str, value: float, unit: str = "g", decimals: int = 2) -> str:
    """A weight reply as a balance writes it (without the terminator)."""
    return f"{command} {status} {value:>{WEIGHT_FIELD}.{decimals}f} {unit}"


def parse(line: str | bytes, command: str) -> Reply:
    """The reply to `command` from one received line (terminator optional)."""
    if isinstance(line, bytes):
        try:
            line = line.decode("ascii")
        except UnicodeDecodeError as exc:
            raise ReplyFormatError(f"non-ASCII reply to {command}: {line!r}") from exc
    text = line.rstrip("\r\n")
    head = text.strip()
    if head in GENERAL_ERRORS:
        return Reply(command=command, status="", error=head)
    ident = reply_id(command)
    if not text.startswith(ident + " ") or len(text) < len(ident) + 2:
        raise ReplyFormatError(f"reply {text!r} does not answer {ident}")
    status = text[len(ident) + 1]
    rest = text[len(ident) + 2:].strip()
    if status in (BUSY, OVERLOAD, UNDERLOAD) and not rest:
        return Reply(command=ident, status=status)
    if ident in ("S", "T"):
        return _weight(ident, status, rest, text)
    return Reply(command=ident, status=status, text=rest)


def _weight(ident: str, status: str, rest: str, text: str) -> Reply:
    if status not in (STABLE, DYNAMIC):
        raise ReplyFormatError(f"weight reply {text!r}: unknown status {status!r}")
    parts = rest.split()
    if len(parts) != 2:
        raise ReplyFormatError(f"weight reply {text!r}: expected a value and a unit")
    value, unit = parts
    if unit not in GRAMS_PER_UNIT:
        raise ReplyFormatError(f"weight reply {text!r}: unit {unit!r} is not a mass unit this driver reads")
    try:
        grams = float(value) * GRAMS_PER_UNIT[unit]
    except ValueError as exc:
        raise ReplyFormatError(f"weight reply {text!r}: value {value!r} is not a number") from exc
    if not math.isfinite(grams):
        raise ReplyFormatError(f"weight reply {text!r}: value {value!r} is not a finite number")
    return Reply(command=ident, status=status, value_g=grams, unit=unit)
