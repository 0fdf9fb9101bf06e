"""A Mettler-Toledo balance on a serial port (MT-SICS, pyserial).

Every call returns: a reply the balance refused, a reply that never came and a
port that vanished all become an invalid reading whose reason names the device
and the cause, so the referee records a validity event and the episode goes on.
A lost port is reopened at most every `reconnect_interval_s` (the same path:
real adapters keep their /dev/serial/by-id name when plugged in again).

Two ways to read: `read()` polls SI (one reply per call); `start_continuous()`
sends SIR once and `read_continuous()` takes the balance's weight values as it
sends them (every overload it indicates at its output rate, none lost between
polls). A balance that does not know SIR answers ES: `start_continuous` says so.
"""
from __future__ import annotations

import math
import termios
import time

import serial

from labference_ros.core.measurements import BalanceMeasurement
from labference_ros.devices import mt_sics

NAN = float("nan")


class SicsError(Exception):
    """The exchange failed (no reply, unreadable reply, or the port is gone)."""


class SicsBalance:
    def __init__(self, port: str, *, baudrate: int = 9600, reply_timeout_s: float = 1.0,
                 reconnect_interval_s: float = 0.5):
        self.port = port
        self.baudrate = baudrate
        self.reply_timeout_s = reply_timeout_s
        self.reconnect_interval_s = reconnect_interval_s
        self._serial: serial.Serial | None = None
        self._last_attempt = -math.inf
        self._reply_owed = False  # a command timed out: its reply may still come
        self._continuous = False  # SIR sent on the open port: weight lines keep coming
        self._first: BalanceMeasurement | None = None  # start_continuous's first line, not yet taken
        self.connections = 0  # successful opens (a reconnection counts again)

    @property
    def source(self) -> str:
        """BalanceReading.source for this device."""
        return f"mt_sics:{self.port}"

    @property
    def connected(self) -> bool:
        return self._serial is not None

    def close(self) -> None:
        self._reply_owed = False
        self._continuous = False
        if self._serial is not None:
            try:
                self._serial.close()
            except (OSError, serial.SerialException):
                pass
        self._serial = None

    # ------------------------------------------------------------------ exchange
    def _open(self) -> serial.Serial:
        if self._serial is not None:
            return self._serial
        now = time.monotonic()
        if now - self._last_attempt < self.reconnect_interval_s:
            raise SicsError(f"port {self.port} unavailable (retrying)")
        self._last_attempt = now
        try:
            self._serial = serial.Serial(self.port, self.baudrate, timeout=self.reply_timeout_s,
                                         write_timeout=self.reply_timeout_s)
        except (OSError, serial.SerialException, ValueError) as exc:
            raise SicsError(f"port {self.port} unavailable: {exc}") from exc
        self.connections += 1
        return self._serial

    def query(self, command: str) -> mt_sics.Reply:
        """Send one command, read its one-line reply (any command ends continuous output here:
        S, SI, SR and @ end it on the balance, and a reply is read as the next line)."""
        self._continuous, self._first = False, None
        port = self._open()
        try:
            if self._reply_owed:
                # The balance may still answer the command that timed out: wait for that
                # reply and drop it, so it is never read as this command's.
                port.read_until(mt_sics.TERMINATOR)
                self._reply_owed = False
            port.reset_input_buffer()
            port.write(mt_sics.encode(command))
            line = port.read_until(mt_sics.TERMINATOR)
        except (OSError, serial.SerialException, termios.error) as exc:  # tcflush on a lost pty: termios.error
            self.close()
            raise SicsError(f"port {self.port} lost: {exc}") from exc
        if not line.endswith(b"\n"):
            self._reply_owed = True
            raise SicsError(f"no reply to {command} within {self.reply_timeout_s:g} s")
        try:
            return mt_sics.parse(line, command)
        except mt_sics.ReplyFormatError as exc:
            raise SicsError(f"unreadable reply: {exc}") from exc

    @property
    def continuous(self) -> bool:
        """Whether the balance was asked for continuous output on the port now open."""
        return self._continuous and self._serial is not None

    def start_continuous(self) -> None:
        """Send SIR: from now on the balance sends a weight line per value (S, SI, SR and
        @ end it, so `read` and `query` must not be used meanwhile). SicsError: the port is
        not there, or the balance refused (ES: a model without SIR; I: busy)."""
        port = self._open()
        try:
            port.reset_input_buffer()
            port.write(mt_sics.encode(mt_sics.CONTINUOUS))
        except (OSError, serial.SerialException, termios.error) as exc:
            self.close()
            raise SicsError(f"port {self.port} lost: {exc}") from exc
        self._reply_owed = False
        self._continuous = True
        first = self.read_continuous()
        if not first.valid and "refused" in first.invalid_reason:
            self._continuous = False
            raise SicsError(first.invalid_reason.removeprefix(f"{self.source}: "))
        self._first = first

    def read_continuous(self) -> BalanceMeasurement:
        """The next weight value of the balance's continuous output (waits up to the reply
        timeout for it); a silent balance, an unreadable line and a lost port become invalid
        readings, and a lost port ends continuous output (start it again once reopened)."""
        if self._first is not None:
            first, self._first = self._first, None
            return first
        if not self.continuous:
            return _invalid(f"{self.source}: continuous output not started")
        try:
            line = self._serial.read_until(mt_sics.TERMINATOR)
        except (OSError, serial.SerialException, termios.error) as exc:
            self.close()
            return _invalid(f"{self.source}: port {self.port} lost: {exc}")
        if not line.endswith(b"\n"):
            return _invalid(f"{self.source}: no weight value within {self.reply_timeout_s:g} s of continuous output")
        try:
            reply = mt_sics.parse(line, mt_sics.CONTINUOUS)
        except mt_sics.ReplyFormatError as exc:
            return _invalid(f"{self.source}: unreadable reply: {exc}")
        if reply.error == "ES":
            return _invalid(f"{self.source}: {mt_sics.CONTINUOUS} refused: {reply.describe()}")
        return _measurement(self.source, reply)

    # ------------------------------------------------------------------ readings
    def read(self, immediate: bool = True) -> BalanceMeasurement:
        """One reading: SI (the current value, stable or not) or S (waits for stability)."""
        command = "SI" if immediate else "S"
        try:
            reply = self.query(command)
        except SicsError as exc:
            return _invalid(f"{self.source}: {exc}")
        return _measurement(self.source, reply)

    def zero(self) -> mt_sics.Reply:
        return self.query("Z")

    def tare(self) -> mt_sics.Reply:
        return self.query("T")


def _measurement(source: str, reply: mt_sics.Reply) -> BalanceMeasurement:
    """A weight reply (to S, SI or SIR) as a reading."""
    if reply.status == mt_sics.OVERLOAD and not reply.error:
        return BalanceMeasurement(raw_g=NAN, filtered_g=NAN, displayed_g=NAN, stable=False, overload=True)
    if not reply.ok or reply.value_g is None:
        return _invalid(f"{source}: {reply.describe()}")
    value = reply.value_g
    return BalanceMeasurement(raw_g=value, filtered_g=value, displayed_g=value, stable=reply.status == mt_sics.STABLE)


def _invalid(reason: str) -> BalanceMeasurement:
    return BalanceMeasurement(raw_g=NAN, filtered_g=NAN, displayed_g=NAN, stable=False, valid=False,
                              invalid_reason=reason)
