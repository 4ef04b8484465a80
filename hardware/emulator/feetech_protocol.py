"""Device side of the Feetech STS/SCS serial protocol, written from the protocol spec.

Packet: FF FF | ID | LEN | INST | PARAMS... | CHECKSUM
LEN counts INST + PARAMS + CHECKSUM; CHECKSUM = ~(ID + LEN + INST + PARAMS) & 0xFF.
Status packets carry an ERROR byte where the instruction would be. Addresses
and lengths are single bytes; multi-byte values are little-endian (STS series).
"""

from __future__ import annotations

from typing import Mapping

from robot_learn.hardware.emulator.servo_instructions import (
    BROADCAST_ID, PING, READ, SYNC_READ, SYNC_WRITE, WRITE, Instruction, sync_read, sync_write, write,
)
from robot_learn.hardware.emulator.servo_model import EmulatedServo


def checksum(data: bytes) -> int:
    """Inverted low byte of the sum of ID, LEN, INST/ERROR and parameters."""
    return (~sum(data)) & 0xFF


class Parser:
    """Accumulates bytes and yields checksum-verified instructions; bad ones are dropped."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.checksum_errors = 0

    def feed(self, data: bytes) -> list[Instruction]:
        self.buffer += data
        packets = []
        while True:
            start = self.buffer.find(b"\xff\xff")
            if start < 0:
                del self.buffer[:max(0, len(self.buffer) - 1)]
                return packets
            del self.buffer[:start]
            # A run of FF bytes: the header is the last two before the ID.
            while len(self.buffer) >= 3 and self.buffer[2] == 0xFF:
                del self.buffer[0]
            if len(self.buffer) < 4:
                return packets
            length = self.buffer[3]
            total = 4 + length
            if length < 2:
                del self.buffer[:2]
                continue
            if len(self.buffer) < total:
                return packets
            raw = bytes(self.buffer[:total])
            del self.buffer[:total]
            if checksum(raw[2:-1]) != raw[-1]:
                self.checksum_errors += 1
                continue
            packets.append(Instruction(raw[2], raw[4], raw[5:-1]))


def status_packet(servo_id: int, error: int = 0, params: bytes = b"") -> bytes:
    """Build a status packet: FF FF ID LEN ERROR PARAMS CHECKSUM."""
    body = bytes([servo_id, len(params) + 2, error]) + params
    return b"\xff\xff" + body + bytes([checksum(body)])


def handle(inst: Instruction, servos: Mapping[int, EmulatedServo]) -> list[tuple[int, bytes]]:
    """Execute one instruction; returns (servo id, reply) pairs in wire order."""
    p = inst.params
    if inst.instruction == PING and inst.servo_id in servos:
        return [(inst.servo_id, status_packet(inst.servo_id))]
    if inst.instruction == READ and inst.servo_id in servos and len(p) == 2:
        return [(inst.servo_id, status_packet(inst.servo_id, 0, servos[inst.servo_id].read(p[0], p[1])))]
    if inst.instruction == WRITE and len(p) >= 2:
        write(servos, inst.servo_id, p[0], p[1:])
        return [(inst.servo_id, status_packet(inst.servo_id))] if inst.servo_id in servos else []
    if inst.instruction == SYNC_READ and inst.servo_id == BROADCAST_ID and len(p) >= 3:
        return sync_read(servos, p[2:], p[0], p[1], status_packet)
    if inst.instruction == SYNC_WRITE and inst.servo_id == BROADCAST_ID and len(p) >= 2:
        sync_write(servos, p[0], p[1], p[2:])
        return []
    return []
