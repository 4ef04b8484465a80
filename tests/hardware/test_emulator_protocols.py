"""Wire-level checks of the emulator's protocol code against the specs' own examples."""

from robot_learn.hardware.emulator import dynamixel_protocol as dxl
from robot_learn.hardware.emulator import feetech_protocol as fee


def test_dynamixel_crc_matches_the_manual_ping_example():
    # ROBOTIS Protocol 2.0 manual: PING to ID 1 is FF FF FD 00 01 03 00 01 19 4E.
    packet = bytes.fromhex("FFFFFD0001030001")
    assert dxl.crc16(packet) == 0x4E19


def test_dynamixel_parser_reads_the_manual_ping_and_rejects_a_bad_crc():
    parser = dxl.Parser()
    good = bytes.fromhex("FFFFFD00010300011 94E".replace(" ", ""))
    bad = good[:-1] + b"\x00"
    packets = parser.feed(b"\x00\x12" + bad + good)
    assert [(p.servo_id, p.instruction) for p in packets] == [(1, dxl.PING)]
    assert parser.crc_errors == 1


def test_dynamixel_byte_stuffing_round_trips_a_header_lookalike():
    body = bytes([0x55, 0x00, 0xFF, 0xFF, 0xFD, 0x10])
    stuffed = dxl.stuff(b"\x00\x00", body)
    assert stuffed == bytes([0x55, 0x00, 0xFF, 0xFF, 0xFD, 0xFD, 0x10])
    assert dxl.unstuff(b"\x00\x00", stuffed) == body


def test_feetech_checksum_of_a_ping():
    # PING to ID 1: FF FF 01 02 01 and checksum ~(1 + 2 + 1) = 0xFB.
    assert fee.checksum(bytes([1, 2, 1])) == 0xFB
    packets = fee.Parser().feed(bytes.fromhex("FFFF01020 1FB".replace(" ", "")))
    assert [(p.servo_id, p.instruction) for p in packets] == [(1, fee.PING)]


def test_feetech_status_packet_layout():
    assert fee.status_packet(3, 0, b"\x10\x20") == bytes([0xFF, 0xFF, 3, 4, 0, 0x10, 0x20, (~(3 + 4 + 0x30)) & 0xFF])
