"""Servo emulator: the device side of the Dynamixel 2.0 and Feetech protocols on a pty."""

from robot_learn.hardware.emulator.pty_emulator import FAULT_KINDS, ServoBusEmulator
from robot_learn.hardware.emulator.servo_model import EmulatedServo

__all__ = ["ServoBusEmulator", "EmulatedServo", "FAULT_KINDS"]
