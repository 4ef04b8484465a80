"""One emulated servo: control-table memory plus first-order position dynamics.

The memory is a bytearray laid out exactly like the real model's control table
(little-endian multi-byte registers), so the wire-protocol layers can serve READ
and WRITE by address without knowing what the registers mean. Physics lives
here: when Torque_Enable is 1, Present_Position follows Goal_Position with a
first-order lag (time constant `tau_s`), computed lazily at each access from
the monotonic clock so motion continues between packets.
"""

from __future__ import annotations

import math
import threading
import time

from robot_learn.hardware.control_table import ModelTable


class EmulatedServo:
    """A servo with an ID, a model's control table and simple dynamics."""

    def __init__(self, servo_id: int, table: ModelTable, position: int | None = None,
                 tau_s: float = 0.05) -> None:
        self.id = servo_id
        self.table = table
        self.tau_s = tau_s
        self.memory = bytearray(max(table.size, 256))
        self._lock = threading.Lock()
        self._position = float(table.resolution // 2 if position is None else position)
        self._last_update = time.monotonic()
        self._poke("Model_Number", table.model_number)
        self._poke("ID", servo_id)
        self._poke("Torque_Enable", 0)
        self._poke("Max_Position_Limit", table.resolution - 1)
        self._poke("Min_Position_Limit", 0)
        self._poke("Goal_Position", int(self._position))
        self._poke("Present_Position", int(self._position))

    # -- register helpers (emulator side, by name) --------------------------------
    def _poke(self, name: str, value: int) -> None:
        reg = self.table.register(name)
        raw = reg.encode(value)
        self.memory[reg.address:reg.address + reg.size] = raw.to_bytes(reg.size, "little")

    def _peek(self, name: str) -> int:
        reg = self.table.register(name)
        raw = int.from_bytes(self.memory[reg.address:reg.address + reg.size], "little")
        return reg.decode(raw)

    def value(self, name: str) -> int:
        """Current value of a register by name (after advancing the dynamics)."""
        with self._lock:
            self._advance()
            return self._peek(name)

    @property
    def torque_enabled(self) -> bool:
        """Whether Torque_Enable is set."""
        return self.value("Torque_Enable") == 1

    def move_by_hand(self, position: float) -> None:
        """Put the shaft at `position` ticks, as an operator moving a limp (leader) arm."""
        with self._lock:
            self._position = float(position)
            self._poke("Present_Position", int(round(self._position)))

    # -- what the protocol layers call ------------------------------------------
    def read(self, address: int, length: int) -> bytes:
        """Bytes of control-table memory, dynamics advanced to now."""
        with self._lock:
            self._advance()
            return bytes(self.memory[address:address + length]).ljust(length, b"\0")

    def write(self, address: int, data: bytes) -> None:
        """Store bytes into memory (what a WRITE/SYNC_WRITE does)."""
        with self._lock:
            self._advance()
            end = min(address + len(data), len(self.memory))
            self.memory[address:end] = data[:end - address]

    def _advance(self) -> None:
        now = time.monotonic()
        dt = now - self._last_update
        self._last_update = now
        if self._peek("Torque_Enable") == 1 and dt > 0:
            goal = float(self._peek("Goal_Position"))
            # Exact discretisation of dx/dt = (goal - x) / tau over dt.
            self._position += (goal - self._position) * (1.0 - math.exp(-dt / self.tau_s))
        self._poke("Present_Position", int(round(self._position)))
        self._poke("Moving", int(self._peek("Torque_Enable") == 1
                                 and abs(self._peek("Goal_Position") - self._position) > 1))
