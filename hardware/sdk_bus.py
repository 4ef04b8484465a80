"""What `DynamixelBus` and `FeetechBus` share: both vendor SDKs expose the same
PortHandler / PacketHandler / GroupSyncRead / GroupSyncWrite API, so one adapter
maps them onto `ServoBus` primitives. Packets are built and parsed by the SDKs."""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

from robot_learn.hardware.bus import CORRUPT, OK, OTHER, TIMEOUT, Outcome, ServoBus
from robot_learn.hardware.control_table import Register

DRAIN_POLL_S = 5e-4  # poll interval while waiting for a quiet line
DRAIN_LIMIT_S = 1.0  # longest a drain waits for the line to go quiet


def make_port_handler(sdk: ModuleType, port: str, timeout_ms: float) -> Any:
    """The SDK's PortHandler with our reply timeout instead of its fixed 2x16 ms latency allowance."""

    class _PortHandler(sdk.PortHandler):  # type: ignore[name-defined, misc]
        def setPacketTimeout(self, packet_length: int) -> None:  # noqa: N802 (SDK name)
            self.packet_start_time = self.getCurrentTime()
            self.packet_timeout = self.tx_time_per_byte * packet_length + timeout_ms

    return _PortHandler(port)


class SDKBus(ServoBus):
    """ServoBus over a ROBOTIS-style SDK module (dynamixel_sdk or scservo_sdk)."""

    sdk: ModuleType

    def _new_packet_handler(self) -> Any:
        raise NotImplementedError

    def _open(self) -> None:
        self._port = make_port_handler(self.sdk, self.port, self.timeout_ms)
        self._ph = self._new_packet_handler()
        if not self._port.openPort():
            raise OSError(f"SDK could not open {self.port}")
        if not self._port.setBaudRate(self.baudrate):
            self._port.closePort()
            raise OSError(f"unsupported baudrate {self.baudrate}")

    def _close(self) -> None:
        self._port.closePort()

    def _drain(self, quiet_s: float = 0.0) -> int:
        # Through pyserial directly: scservo_sdk's clearPort() flushes output, not input.
        ser = self._port.ser
        dropped = 0
        now = time.monotonic()
        quiet_until, give_up = now + quiet_s, now + DRAIN_LIMIT_S
        while True:
            waiting = ser.in_waiting
            if waiting:
                dropped += len(ser.read(waiting))
                quiet_until = time.monotonic() + quiet_s
            now = time.monotonic()
            if now >= quiet_until or now >= give_up:  # give_up: a babbling line must not hang us
                return dropped
            time.sleep(DRAIN_POLL_S)

    def _outcome(self, result: int, error: int = 0, failed_id: int | None = None) -> Outcome:
        text = self._ph.getTxRxResult(result)
        if result == self.sdk.COMM_SUCCESS:
            if error:
                text = self._ph.getRxPacketError(error)
            return Outcome(OK, text, error)
        kind = {self.sdk.COMM_RX_TIMEOUT: TIMEOUT, self.sdk.COMM_RX_CORRUPT: CORRUPT}.get(result, OTHER)
        return Outcome(kind, text, 0, failed_id)

    def _ping_once(self, motor_id: int) -> tuple[int, Outcome]:
        number, result, error = self._ph.ping(self._port, motor_id)
        return number, self._outcome(result, error, motor_id)

    def _read_once(self, motor_id: int, reg: Register) -> tuple[int, Outcome]:
        data, result, error = self._ph.readTxRx(self._port, motor_id, reg.address, reg.size)
        if result == self.sdk.COMM_SUCCESS and len(data) < reg.size:
            # The SDKs match a reply by ID only, so a late reply from this motor to an
            # earlier request (a ping, a write ack) can be taken for this read.
            return 0, Outcome(CORRUPT, f"reply with {len(data)} of {reg.size} data bytes "
                                       f"(a late reply to an earlier request?)", 0, motor_id)
        value = int.from_bytes(bytes(data[:reg.size]), "little") if result == self.sdk.COMM_SUCCESS else 0
        return value, self._outcome(result, error, motor_id)

    def _write_once(self, motor_id: int, reg: Register, raw: int) -> Outcome:
        result, error = self._ph.writeTxRx(self._port, motor_id, reg.address, reg.size,
                                           list(raw.to_bytes(reg.size, "little")))
        return self._outcome(result, error, motor_id)

    def _sync_read_once(self, reg: Register, ids: list[int]) -> tuple[dict[int, int], Outcome]:
        # A fresh group per call: after a failure the SDK leaves stale data for later IDs.
        group = self.sdk.GroupSyncRead(self._port, self._ph, reg.address, reg.size)
        for motor_id in ids:
            group.addParam(motor_id)
        result = group.txRxPacket()
        if result != self.sdk.COMM_SUCCESS:
            failed = next((i for i in ids if not group.isAvailable(i, reg.address, reg.size)), None)
            return {}, self._outcome(result, 0, failed)
        values = {i: int.from_bytes(bytes(group.data_dict[i][:reg.size]), "little") for i in ids}
        return values, self._outcome(result)

    def _sync_write_once(self, reg: Register, raw: dict[int, int]) -> Outcome:
        group = self.sdk.GroupSyncWrite(self._port, self._ph, reg.address, reg.size)
        for motor_id, value in raw.items():
            group.addParam(motor_id, list(value.to_bytes(reg.size, "little")))
        return self._outcome(group.txPacket())
