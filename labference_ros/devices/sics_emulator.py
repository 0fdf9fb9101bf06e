"""A balance that speaks MT-SICS on a pseudo-terminal: the driver's test peer,
and the rehearsal's stand-in for the real balance.

It listens on the master side of a pty and publishes the slave under a fixed
path (a symbolic link, as udev's /dev/serial/by-id names a real adapter), so a
driver opens it like any serial port. The load comes from `set_load_g` or from
a callable (the simulator's load cell in a rehearsal). Faults a real balance
shows can be switched on: a mute balance (no reply), a slow one, a busy one, a
model that lacks a command, a port that disappears and comes back under the same
name.

SIR starts continuous output, as on a balance: one weight line per new weight
value (each `set_load_g`, i.e. each simulated load-cell reading in a rehearsal),
and at least every `update_period_s` while the load stays (its UPD rate), until
S, SI, SR or @ cancels it. Lines nobody reads are dropped, as bytes on a serial
line are, and never block the caller.
"""
from __future__ import annotations

import os
import select
import threading
import time
import tty
from pathlib import Path
from typing import Callable

from labference_ros.devices import mt_sics


class SicsBalanceEmulator:
    def __init__(self, link: str | Path, *, capacity_g: float = 620.0, decimals: int = 2,
                 settle_s: float = 0.3, stability_timeout_s: float = 1.0, underload_g: float = -5.0,
                 serial_number: str = "0000000001", load_source: Callable[[], float] | None = None,
                 update_period_s: float = 0.05):
        self.link = Path(link)
        self.capacity_g = capacity_g
        self.decimals = decimals
        self.settle_s = settle_s
        self.stability_timeout_s = stability_timeout_s
        self.underload_g = underload_g
        self.serial_number = serial_number
        self.load_source = load_source
        self.update_period_s = update_period_s  # continuous output's slowest rate (a balance's UPD)
        self.mute = False        # read commands, answer nothing (the driver times out)
        self.busy = False        # answer every weight and zero/tare command with "I"
        self.unsupported: set[str] = set()  # commands this model lacks (answered ES)
        self.reply_delay_s = 0.0  # a slow balance: replies leave this much later
        self.received: list[str] = []
        self._load_g = 0.0
        self._changed_at = time.monotonic()
        self._settled_hint: bool | None = None
        self._zero_g = 0.0
        self._tare_g = 0.0
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._continuous = False
        self._last_line_at = 0.0
        self._master: int | None = None
        self._slave: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ control
    def start(self) -> "SicsBalanceEmulator":
        self._open_port()
        self._stop.clear()
        self._thread = threading.Thread(target=self._serve, name="sics-emulator", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._close_port()

    def disconnect(self) -> None:
        """The cable is pulled: the port vanishes (reads on the driver's side fail)."""
        with self._lock:
            self._close_port()

    def reconnect(self) -> None:
        """Plugged in again: a new pty under the same name."""
        with self._lock:
            self._open_port()

    def set_load_g(self, grams: float, settled: bool | None = None) -> None:
        """The load on the pan. settled: whether it has settled, as a load cell model decides
        (the rehearsal's simulated balance); None: settled once unchanged for settle_s.
        In continuous output each call is a new weight value, sent at once."""
        self._set_load(grams, settled)
        if self._continuous:
            self._send_weight()

    def _set_load(self, grams: float, settled: bool | None) -> None:
        with self._lock:
            if grams != self._load_g:
                self._load_g = float(grams)
                self._changed_at = time.monotonic()
            self._settled_hint = settled

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # ------------------------------------------------------------------ port
    def _open_port(self) -> None:
        self._continuous = False  # a new port: the driver must ask again
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)  # no CR/LF translation, no echo: bytes as on a wire
        os.set_blocking(self._master, False)  # output nobody reads is dropped, never waited on
        tmp = self.link.with_name(self.link.name + ".new")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(os.ttyname(self._slave))
        tmp.replace(self.link)

    def _close_port(self) -> None:
        self.link.unlink(missing_ok=True)
        for fd in (self._master, self._slave):
            if fd is not None:
                os.close(fd)
        self._master = self._slave = None

    # ------------------------------------------------------------------ serving
    def _serve(self) -> None:
        pending = b""
        while not self._stop.is_set():
            master = self._master
            if master is None:
                time.sleep(0.02)
                pending = b""
                continue
            if self._continuous and time.monotonic() - self._last_line_at >= self.update_period_s:
                try:
                    self._send_weight()
                except Exception:  # a failing load source: no line this time, the balance stays up
                    pass
            try:
                ready, _, _ = select.select([master], [], [], min(0.05, self.update_period_s))
                if not ready:
                    continue
                pending += os.read(master, 256)
            except OSError:  # disconnected meanwhile (closed fd), or the reader went away
                time.sleep(0.02)
                continue
            while b"\n" in pending:
                raw, pending = pending.split(b"\n", 1)
                command = raw.rstrip(b"\r").decode("ascii", errors="replace")
                self.received.append(command)
                try:
                    reply = "ES" if command.strip() in self.unsupported else self._answer(command)
                except Exception:  # a failing load source: the balance cannot execute, it stays up
                    reply = "EL"
                if self.reply_delay_s > 0:
                    time.sleep(self.reply_delay_s)
                if reply is not None and not self.mute:
                    self._write(reply)

    def _write(self, line: str) -> None:
        with self._write_lock:
            master = self._master
            if master is None:
                return
            try:
                os.write(master, line.encode("ascii") + mt_sics.TERMINATOR)
            except OSError:  # nobody reads (the buffer is full) or the port went: the line is lost
                pass

    def _send_weight(self) -> None:
        """One line of continuous output: the current weight value (SIR's replies are SI's)."""
        self._last_line_at = time.monotonic()
        if self.mute:
            return
        self._write(self._immediate())

    def _immediate(self) -> str:
        if self.busy:
            return f"S {mt_sics.BUSY}"
        load, settled = self._load()
        status = mt_sics.STABLE if settled else mt_sics.DYNAMIC
        return self._range("S", load) or mt_sics.format_weight(
            "S", status, load - self._zero_g - self._tare_g, decimals=self.decimals)

    def _load(self) -> tuple[float, bool]:
        """(gross load in grams, settled) now."""
        if self.load_source is not None:
            self._set_load(self.load_source(), None)
        with self._lock:
            if self._settled_hint is not None:
                return self._load_g, self._settled_hint
            return self._load_g, time.monotonic() - self._changed_at >= self.settle_s

    def _wait_stable(self) -> tuple[float, bool]:
        deadline = time.monotonic() + self.stability_timeout_s
        load, settled = self._load()
        while not settled and time.monotonic() < deadline and not self._stop.is_set():
            time.sleep(0.01)
            load, settled = self._load()
        return load, settled

    def _range(self, ident: str, load: float) -> str | None:
        if load > self.capacity_g:
            return f"{ident} {mt_sics.OVERLOAD}"
        if load < self.underload_g:
            return f"{ident} {mt_sics.UNDERLOAD}"
        return None

    def _answer(self, command: str) -> str | None:
        ident = command.strip()
        if ident in mt_sics.CANCELS_CONTINUOUS:
            self._continuous = False
        if ident == mt_sics.CONTINUOUS:
            self._continuous = True
            self._last_line_at = time.monotonic()
            return self._immediate()
        if ident in ("S", "SI", "Z", "T") and self.busy:
            return f"{mt_sics.reply_id(ident)} {mt_sics.BUSY}"
        if ident == "SI":
            return self._immediate()
        if ident in ("S", "Z", "T"):
            load, settled = self._wait_stable()
            out_of_range = self._range(ident, load)
            if out_of_range:
                return out_of_range
            if not settled:
                return f"{ident} {mt_sics.BUSY}"
            if ident == "Z":
                self._zero_g, self._tare_g = load, 0.0
                return "Z A"
            if ident == "T":
                self._tare_g = load - self._zero_g
                return mt_sics.format_weight("T", mt_sics.STABLE, self._tare_g, decimals=self.decimals)
            return mt_sics.format_weight("S", mt_sics.STABLE, load - self._zero_g - self._tare_g,
                                         decimals=self.decimals)
        if ident == "@":
            self._tare_g = 0.0
            return f'I4 A "{self.serial_number}"'
        if ident == "I4":
            return f'I4 A "{self.serial_number}"'
        return "ES"
