"""Device side of the ROBOTIS Dynamixel Protocol 2.0, written from the protocol spec.

Packet: FF FF FD 00 | ID | LEN_L LEN_H | INST | PARAMS... | CRC_L CRC_H
LEN counts INST + PARAMS + CRC. Status packets put INST=0x55 and an ERROR byte
before the parameters. CRC-16 uses polynomial 0x8005 (no reflection, init 0)
over every byte before the CRC. Byte stuffing: inside the body, every FF FF FD
is followed by an extra FD so a body can never look like a header.
"""

from __future__ import annotations

from typing import Mapping

from robot_learn.hardware.emulator.servo_instructions import (
    BROADCAST_ID, PING, READ, SYNC_READ, SYNC_WRITE, WRITE, Instruction, sync_read, sync_write, write,
)
from robot_learn.hardware.emulator.servo_model import EmulatedServo

HEADER = b"\xff\xff\xfd\x00"
STATUS = 0x55
ERR_INSTRUCTION, ERR_CRC, ERR_ACCESS = 0x02, 0x03, 0x07


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return table


_TABLE = _crc_table()


def crc16(data: bytes) -> int:
    """CRC-16 with polynomial 0x8005, MSB first, initial value 0."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) ^ _TABLE[((crc >> 8) ^ byte) & 0xFF]) & 0xFFFF
    return crc


def stuff(prefix: bytes, body: bytes) -> bytes:
    """Insert an FD after each FF FF FD in `body`; `prefix` is what precedes it on the wire."""
    out = bytearray()
    history = bytearray(prefix[-2:])
    for byte in body:
        out.append(byte)
        history.append(byte)
        if history[-3:] == b"\xff\xff\xfd":
            out.append(0xFD)
            history.append(0xFD)
    return bytes(out)


def unstuff(prefix: bytes, body: bytes) -> bytes:
    """Remove the FD that follows each FF FF FD in `body` (inverse of `stuff`)."""
    out = bytearray()
    history = bytearray(prefix[-2:])
    skip_next = False
    for byte in body:
        if skip_next:
            skip_next = False
            if byte == 0xFD:
                continue
        out.append(byte)
        history.append(byte)
        if history[-3:] == b"\xff\xff\xfd":
            skip_next = True
    return bytes(out)


class Parser:
    """Accumulates bytes from the wire and yields complete, CRC-checked instructions.

    Packets with a bad CRC are dropped, as a real servo does (it stays silent)."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.crc_errors = 0

    def feed(self, data: bytes) -> list[Instruction]:
        self.buffer += data
        packets = []
        while True:
            start = self.buffer.find(HEADER)
            if start < 0:
                del self.buffer[:max(0, len(self.buffer) - 3)]  # keep a possible partial header
                return packets
            del self.buffer[:start]
            if len(self.buffer) < 7:
                return packets
            length = self.buffer[5] | (self.buffer[6] << 8)
            total = 7 + length
            if length < 3:
                del self.buffer[:4]
                continue
            if len(self.buffer) < total:
                return packets
            raw = bytes(self.buffer[:total])
            del self.buffer[:total]
            if crc16(raw[:-2]) != (raw[-2] | (raw[-1] << 8)):
                self.crc_errors += 1
                continue
            body = unstuff(raw[:7], raw[7:-2])
            packets.append(Instruction(raw[4], body[0], body[1:]))


def status_packet(servo_id: int, error: int = 0, params: bytes = b"") -> bytes:
    """Build a status packet: header, ID, length, 0x55, error, params (stuffed), CRC."""
    body = stuff(b"\x00\x00", bytes([STATUS, error]) + params)
    length = len(body) + 2
    head = HEADER + bytes([servo_id, length & 0xFF, length >> 8])
    packet = head + body
    crc = crc16(packet)
    return packet + bytes([crc & 0xFF, crc >> 8])


def handle(inst: Instruction, servos: Mapping[int, EmulatedServo]) -> list[tuple[int, bytes]]:
    """Execute one instruction on the emulated servos; returns (servo id, reply) pairs in wire order."""
    p = inst.params
    if inst.instruction == PING:
        ids = sorted(servos) if inst.servo_id == BROADCAST_ID else [inst.servo_id]
        replies = []
        for sid in ids:
            if sid in servos:
                s = servos[sid]
                info = s.read(0, 2) + s.read(6, 1)  # model number, firmware version
                replies.append((sid, status_packet(sid, 0, info)))
        return replies
    if inst.instruction == READ and inst.servo_id in servos and len(p) == 4:
        address, length = p[0] | (p[1] << 8), p[2] | (p[3] << 8)
        return [(inst.servo_id, status_packet(inst.servo_id, 0, servos[inst.servo_id].read(address, length)))]
    if inst.instruction == WRITE and len(p) >= 3:
        write(servos, inst.servo_id, p[0] | (p[1] << 8), p[2:])
        if inst.servo_id in servos:
            return [(inst.servo_id, status_packet(inst.servo_id))]
        return []
    if inst.instruction == SYNC_READ and inst.servo_id == BROADCAST_ID and len(p) >= 5:
        return sync_read(servos, p[4:], p[0] | (p[1] << 8), p[2] | (p[3] << 8), status_packet)
    if inst.instruction == SYNC_WRITE and inst.servo_id == BROADCAST_ID and len(p) >= 4:
        sync_write(servos, p[0] | (p[1] << 8), p[2] | (p[3] << 8), p[4:])
        return []
    if inst.servo_id in servos:  # unknown or malformed instruction addressed to one servo
        return [(inst.servo_id, status_packet(inst.servo_id, ERR_INSTRUCTION))]
    return []
