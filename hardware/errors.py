"""Errors raised by the servo buses, calibration and safety layers.

Every message names the motor (name and ID), the register and the port involved,
so an operator can tell which cable or servo to look at.
"""

from __future__ import annotations


class ServoBusError(RuntimeError):
    """Base class for every failure talking to a servo bus."""


class SDKMissingError(ServoBusError):
    """A vendor SDK (dynamixel-sdk, feetech-servo-sdk or pyserial) is not installed."""


class PortNotFoundError(ServoBusError):
    """The serial port does not exist; the message lists the ports that do."""


class BusNotConnectedError(ServoBusError):
    """An operation was attempted before `connect()` (or after `disconnect()`)."""


class MotorNotRespondingError(ServoBusError):
    """A motor did not answer within the timeout, after all retries."""


class CorruptReplyError(ServoBusError):
    """A motor's reply failed its checksum/CRC, after all retries."""


class MotorErrorStatus(ServoBusError):
    """A motor answered with a hardware/instruction error bit set."""


class BusDisconnectedError(ServoBusError):
    """The serial device went away (cable pulled, adapter reset)."""


class UnknownMotorError(ServoBusError):
    """A motor name, model or register is not known; the message lists valid ones."""


class CalibrationError(ServoBusError):
    """Calibration file missing, corrupt or inconsistent with the arm."""


class EStopError(ServoBusError):
    """A command was refused because the emergency stop is engaged."""
