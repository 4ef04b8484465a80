"""`ServoBus`: named-register access to a chain of servos, with retries and clear errors.

Subclasses (`DynamixelBus`, `FeetechBus`) wrap the vendors' SDKs; this base class
owns what is common: the motor table (name -> id, model), register lookup and
value encoding, a bounded retry budget, thread safety (the watchdog and the
control loop share one bus) and turning SDK result codes into `ServoBusError`s
that name the port, motor, id and register.
"""

from __future__ import annotations

import termios
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, TypeVar

from robot_learn.hardware.control_table import ModelTable, Register, model_table
from robot_learn.hardware.errors import (
    BusDisconnectedError, BusNotConnectedError, CorruptReplyError, MotorErrorStatus,
    MotorNotRespondingError, ServoBusError, UnknownMotorError,
)
from robot_learn.hardware.ports import check_port_exists

T = TypeVar("T")

# Outcome kinds the vendor layers report for one transaction.
OK, TIMEOUT, CORRUPT, OTHER = "ok", "timeout", "corrupt", "other"


@dataclass(frozen=True)
class Motor:
    """A motor on the bus: its ID and model name (a key of control_table.MODELS)."""

    id: int
    model: str

    @property
    def table(self) -> ModelTable:
        return model_table(self.model)


@dataclass
class Outcome:
    """Result of one raw SDK transaction."""

    kind: str  # OK | TIMEOUT | CORRUPT | OTHER
    text: str = ""
    error_byte: int = 0
    failed_id: int | None = None


class ServoBus(ABC):
    """A serial bus of servos addressed by name.

    Args:
        port: serial device path.
        motors: motor name -> Motor (id, model).
        baudrate: bus speed (1 Mbps for both arms we support).
        timeout_ms: time to wait for a reply beyond its transmission time.
        retries: extra attempts after a failed transaction (bounded retry budget).
    """

    vendor = ""

    def __init__(self, port: str, motors: Mapping[str, Motor], baudrate: int = 1_000_000,
                 timeout_ms: float = 20.0, retries: int = 2) -> None:
        self.port = port
        self.motors = dict(motors)
        for name, motor in self.motors.items():
            if motor.table.vendor != self.vendor:
                raise UnknownMotorError(f"motor {name!r} model {motor.model} is not a {self.vendor} servo")
        self.baudrate = baudrate
        self.timeout_ms = timeout_ms
        self.retries = retries
        self.lock = threading.RLock()
        self._connected = False
        self.retries_used = 0  # total retries spent, for diagnostics and tests

    # -- vendor primitives --------------------------------------------------------
    @abstractmethod
    def _open(self) -> None: ...

    @abstractmethod
    def _close(self) -> None: ...

    @abstractmethod
    def _drain(self, quiet_s: float = 0.0) -> int:
        """Discard received bytes until none arrives for `quiet_s`; returns how many were dropped."""

    @abstractmethod
    def _ping_once(self, motor_id: int) -> tuple[int, Outcome]: ...

    @abstractmethod
    def _read_once(self, motor_id: int, reg: Register) -> tuple[int, Outcome]: ...

    @abstractmethod
    def _write_once(self, motor_id: int, reg: Register, raw: int) -> Outcome: ...

    @abstractmethod
    def _sync_read_once(self, reg: Register, ids: list[int]) -> tuple[dict[int, int], Outcome]: ...

    @abstractmethod
    def _sync_write_once(self, reg: Register, raw: dict[int, int]) -> Outcome: ...

    # -- connection -----------------------------------------------------------------
    @property
    def is_connected(self) -> bool:
        return self._connected

    def connect(self, handshake: bool = True) -> None:
        """Open the port; with `handshake`, check every motor answers with the expected model."""
        check_port_exists(self.port)
        with self.lock:
            try:
                self._open()
            except (OSError, IOError) as exc:
                raise BusDisconnectedError(f"{self.vendor} bus: cannot open {self.port}: {exc}") from exc
            self._connected = True
        if handshake:
            try:
                self.check_motors()
            except ServoBusError:
                self.disconnect(disable_torque=False)
                raise

    def check_motors(self) -> None:
        """Ping every configured motor; raise naming the missing or mismatched ones."""
        missing, wrong = [], []
        for name, motor in self.motors.items():
            number = self.ping(motor.id)
            if number is None:
                missing.append(f"{name!r} (id {motor.id})")
            elif number != motor.table.model_number:
                wrong.append(f"{name!r} (id {motor.id}) is model number {number}, "
                             f"expected {motor.table.model_number} ({motor.model})")
        if missing or wrong:
            # The list of answering IDs is the user's clue to what is unplugged: scan with at
            # least 2 retries, so one reply lost on a busy host does not drop a servo from it.
            found = self.scan(range(0, 21), retries=max(self.retries, 2))
            parts = []
            if missing:
                parts.append(f"no reply from {', '.join(missing)}")
            if wrong:
                parts.append("; ".join(wrong))
            raise MotorNotRespondingError(
                f"{self.vendor} bus on {self.port}: {'; '.join(parts)}; "
                f"ids answering: {sorted(found) or 'none'}")

    def disconnect(self, disable_torque: bool = True) -> None:
        """Optionally disable torque on every motor, then close the port (idempotent)."""
        if not self._connected:
            return
        with self.lock:
            try:
                if disable_torque:
                    self.disable_torque()
            finally:
                try:
                    self._close()
                except (OSError, termios.error):
                    pass
                self._connected = False

    # -- names and values ---------------------------------------------------------------
    def motor(self, name_or_id: str | int) -> tuple[str, Motor]:
        """Resolve a motor by name or id; unknown ones list the valid names."""
        if isinstance(name_or_id, str):
            if name_or_id not in self.motors:
                raise UnknownMotorError(f"unknown motor {name_or_id!r}; valid motors: {', '.join(self.motors)}")
            return name_or_id, self.motors[name_or_id]
        for name, motor in self.motors.items():
            if motor.id == name_or_id:
                return name, motor
        return f"id{name_or_id}", Motor(int(name_or_id), next(iter(self.motors.values())).model)

    def _register(self, name: str, motors: Iterable[str]) -> Register:
        regs = {self.motors[m].table.register(name) for m in motors}
        if len(regs) != 1:
            raise UnknownMotorError(f"register {name!r} differs between the motors' models; access them separately")
        return regs.pop()

    def _require_connected(self) -> None:
        if not self._connected:
            raise BusNotConnectedError(f"{self.vendor} bus on {self.port} is not connected; call connect() first")

    def _attempts(self, what: str, fn: Callable[[], tuple[T, Outcome]], group: bool = False) -> T:
        """Run one transaction with the retry budget; raise a clear error when it is spent.

        `what` names the operation; for a single motor it names the motor too. For a
        `group` transaction the error adds the motor that failed to answer."""
        self._require_connected()
        last = Outcome(OTHER)
        with self.lock:
            for attempt in range(self.retries + 1):
                try:
                    if attempt:
                        self.retries_used += 1
                        self._drain()  # drop a late reply so it is not taken for the next one
                    value, outcome = fn()
                except (OSError, termios.error) as exc:  # serial.SerialException is an OSError
                    self._connected = False
                    raise BusDisconnectedError(
                        f"{self.vendor} bus on {self.port} disconnected while {what}: {exc}") from exc
                except IndexError as exc:
                    # The SDKs index into a reply without checking its length; a stale
                    # reply from an earlier timed-out attempt can be too short.
                    last = Outcome(CORRUPT, f"malformed reply ({exc})")
                    continue
                if outcome.kind == OK:
                    if outcome.error_byte:
                        raise MotorErrorStatus(f"{self.vendor} bus on {self.port}: error status "
                                               f"0x{outcome.error_byte:02x} while {what}: {outcome.text}")
                    return value
                last = outcome
        who = ""
        if group and last.failed_id is not None:
            name, _ = self.motor(last.failed_id)
            who = f" (motor {name!r}, id {last.failed_id})"
        msg = (f"{self.vendor} bus on {self.port}: {what}{who} failed after {self.retries + 1} attempts "
               f"(timeout {self.timeout_ms:g} ms): {last.text}")
        if last.kind == TIMEOUT:
            raise MotorNotRespondingError(msg)
        if last.kind == CORRUPT:
            raise CorruptReplyError(msg)
        raise ServoBusError(msg)

    # -- public operations ----------------------------------------------------------------
    def ping(self, motor: str | int) -> int | None:
        """Model number of a motor, or None if it does not answer (after retries)."""
        name, m = self.motor(motor)
        try:
            return self._attempts(f"pinging motor {name!r} (id {m.id})", lambda: self._ping_once(m.id))
        except (MotorNotRespondingError, CorruptReplyError):
            return None

    def scan(self, ids: Iterable[int] = range(0, 253), retries: int | None = None) -> dict[int, int]:
        """IDs that answer, with their model numbers.

        Each ID is pinged up to `retries` + 1 times (default: the bus's retry budget),
        so one lost reply does not hide a servo. After a ping that got no reply, the
        next ping (a retry or the next ID) waits until the line has been quiet for one
        reply timeout, dropping what arrives, so a late reply is not read as the answer
        to a later ping. A silent ID costs about 2 x (retries + 1) timeouts."""
        self._require_connected()
        attempts = 1 + (self.retries if retries is None else retries)
        if attempts < 1:
            raise ValueError(f"scan retries must be >= 0, got {retries}")
        found: dict[int, int] = {}
        missed = False  # a ping of the previous ID got no reply; it may still arrive
        with self.lock:
            try:
                for motor_id in ids:
                    number, missed = self._probe(motor_id, attempts, settle=missed)
                    if number is not None:
                        found[motor_id] = number
            except (OSError, termios.error) as exc:
                self._connected = False
                raise BusDisconnectedError(f"{self.vendor} bus on {self.port} disconnected while scanning: {exc}") from exc
        return found

    def _probe(self, motor_id: int, attempts: int, settle: bool) -> tuple[int | None, bool]:
        """Ping one ID for `scan`, draining first (until quiet when `settle`).

        Returns the model number (None if it never answered) and whether any ping
        missed its reply: then a reply may still be on its way, so the next ID settles."""
        missed = False
        for _ in range(attempts):
            self._drain(self.timeout_ms / 1000.0 if settle or missed else 0.0)
            try:
                number, outcome = self._ping_once(motor_id)
            except IndexError:  # a malformed reply (see _attempts)
                outcome = Outcome(CORRUPT)
            if outcome.kind == OK:
                return number, missed
            missed = True
        return None, True

    def read(self, register: str, motor: str) -> int:
        """Read one register of one motor (decoded to a signed int where the register is signed)."""
        name, m = self.motor(motor)
        reg = m.table.register(register)
        raw = self._attempts(f"reading {register} of motor {name!r} (id {m.id})", lambda: self._read_once(m.id, reg))
        return reg.decode(raw)

    def write(self, register: str, motor: str, value: int) -> None:
        """Write one register of one motor and wait for its acknowledgement."""
        name, m = self.motor(motor)
        reg = m.table.register(register)
        raw = reg.encode(value)
        self._attempts(f"writing {register}={value} to motor {name!r} (id {m.id})",
                       lambda: (None, self._write_once(m.id, reg, raw)))

    def sync_read(self, register: str, motors: Iterable[str] | None = None) -> dict[str, int]:
        """Read one register from many motors in one SYNC_READ transaction."""
        names = list(motors) if motors is not None else list(self.motors)
        for n in names:
            self.motor(n)
        reg = self._register(register, names)
        ids = [self.motors[n].id for n in names]
        raw = self._attempts(f"sync-reading {register}", lambda: self._sync_read_once(reg, ids), group=True)
        return {n: reg.decode(raw[self.motors[n].id]) for n in names}

    def sync_write(self, register: str, values: Mapping[str, float | int]) -> None:
        """Write one register on many motors in one SYNC_WRITE (no replies by design)."""
        for n in values:
            self.motor(n)
        reg = self._register(register, values)
        raw = {self.motors[n].id: reg.encode(int(round(v))) for n, v in values.items()}
        self._attempts(f"sync-writing {register}", lambda: (None, self._sync_write_once(reg, raw)))

    def enable_torque(self, motors: Iterable[str] | None = None) -> None:
        """Turn torque on (each write acknowledged, so a missing motor is reported)."""
        for n in (list(motors) if motors is not None else list(self.motors)):
            self.write("Torque_Enable", n, 1)

    def disable_torque(self, motors: Iterable[str] | None = None) -> None:
        """Turn torque off on each motor; every motor is tried even if one fails."""
        errors = []
        for n in (list(motors) if motors is not None else list(self.motors)):
            try:
                self.write("Torque_Enable", n, 0)
            except BusDisconnectedError:
                raise
            except ServoBusError as exc:
                errors.append(str(exc))
        if errors:
            raise ServoBusError("could not disable torque on every motor: " + " | ".join(errors))

    def torque_enabled(self) -> dict[str, bool]:
        """Torque_Enable of every motor."""
        return {n: bool(v) for n, v in self.sync_read("Torque_Enable").items()}
