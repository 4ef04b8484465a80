"""What Dynamixel Protocol 2.0 and the Feetech STS protocol share once a packet is
parsed: the instruction codes, the broadcast ID, and how WRITE, SYNC READ and
SYNC WRITE act on the emulated servos.

The two differ on the wire (header, length and address widths, CRC vs checksum),
which stays in :mod:`.dynamixel_protocol` and :mod:`.feetech_protocol`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from robot_learn.hardware.emulator.servo_model import EmulatedServo

BROADCAST_ID = 0xFE
PING, READ, WRITE, SYNC_READ, SYNC_WRITE = 0x01, 0x02, 0x03, 0x82, 0x83

StatusPacket = Callable[[int, int, bytes], bytes]  # (servo id, error, params) -> packet


@dataclass
class Instruction:
    """A parsed, integrity-checked instruction packet (Dynamixel bodies already unstuffed)."""

    servo_id: int
    instruction: int
    params: bytes


def write(servos: Mapping[int, EmulatedServo], servo_id: int, address: int, data: bytes) -> None:
    """WRITE ``data`` at ``address`` of servo ``servo_id``, or of every servo for the broadcast ID."""
    targets = sorted(servos) if servo_id == BROADCAST_ID else [servo_id]
    for sid in targets:
        if sid in servos:
            servos[sid].write(address, data)


def sync_read(servos: Mapping[int, EmulatedServo], ids: bytes, address: int, length: int,
              status_packet: StatusPacket) -> list[tuple[int, bytes]]:
    """SYNC READ: one status packet per listed servo that exists, in the listed order."""
    return [(sid, status_packet(sid, 0, servos[sid].read(address, length))) for sid in ids if sid in servos]


def sync_write(servos: Mapping[int, EmulatedServo], address: int, length: int, entries: bytes) -> None:
    """SYNC WRITE: ``entries`` holds (ID, ``length`` data bytes) per servo; absent servos are skipped."""
    for i in range(0, len(entries) - length, length + 1):
        sid = entries[i]
        if sid in servos:
            servos[sid].write(address, entries[i + 1:i + 1 + length])
