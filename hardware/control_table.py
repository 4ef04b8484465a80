"""Per-model control tables: register name -> (address, size, signedness).

Addresses follow the vendors' published e-manuals (ROBOTIS X-series for
XL430-W250 / XL330-M288 / XL330-M077, Feetech STS3215 memory table). Only the
registers the drivers use are listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from robot_learn.hardware.errors import UnknownMotorError


@dataclass(frozen=True)
class Register:
    """One register: byte address, width in bytes, and how negative values are encoded.

    `sign` is "none" (unsigned), "twos" (two's complement, Dynamixel) or
    "bit<N>" (sign-magnitude with the sign in bit N, Feetech)."""

    address: int
    size: int
    sign: str = "none"

    def encode(self, value: int) -> int:
        """Python int -> raw unsigned register value."""
        value = int(value)
        if self.sign == "twos":
            return value & ((1 << (8 * self.size)) - 1)
        if self.sign.startswith("bit"):
            bit = int(self.sign[3:])
            return (abs(value) & ((1 << bit) - 1)) | ((1 << bit) if value < 0 else 0)
        if value < 0 or value >= 1 << (8 * self.size):
            raise ValueError(f"value {value} does not fit an unsigned {self.size}-byte register")
        return value

    def decode(self, raw: int) -> int:
        """Raw unsigned register value -> Python int."""
        raw = int(raw)
        if self.sign == "twos":
            top = 1 << (8 * self.size - 1)
            return raw - (1 << (8 * self.size)) if raw & top else raw
        if self.sign.startswith("bit"):
            bit = int(self.sign[3:])
            magnitude = raw & ((1 << bit) - 1)
            return -magnitude if raw & (1 << bit) else magnitude
        return raw


@dataclass(frozen=True)
class ModelTable:
    """A servo model: its model number, position resolution and registers."""

    name: str
    vendor: str  # "dynamixel" | "feetech"
    model_number: int
    resolution: int  # position ticks per turn
    registers: dict[str, Register] = field(default_factory=dict)

    def register(self, name: str) -> Register:
        """Look a register up by name; unknown names list the valid ones."""
        try:
            return self.registers[name]
        except KeyError:
            raise UnknownMotorError(
                f"model {self.name} has no register {name!r}; "
                f"valid registers: {', '.join(sorted(self.registers))}") from None

    @property
    def size(self) -> int:
        """Bytes of control-table memory needed to hold every register."""
        return max(r.address + r.size for r in self.registers.values())


_X_SERIES = {
    "Model_Number": Register(0, 2),
    "Firmware_Version": Register(6, 1),
    "ID": Register(7, 1),
    "Baud_Rate": Register(8, 1),
    "Return_Delay_Time": Register(9, 1),
    "Drive_Mode": Register(10, 1),
    "Operating_Mode": Register(11, 1),
    "Homing_Offset": Register(20, 4, "twos"),
    "Max_Position_Limit": Register(48, 4),
    "Min_Position_Limit": Register(52, 4),
    "Torque_Enable": Register(64, 1),
    "LED": Register(65, 1),
    "Status_Return_Level": Register(68, 1),
    "Hardware_Error_Status": Register(70, 1),
    "Position_P_Gain": Register(84, 2),
    "Goal_Current": Register(102, 2, "twos"),
    "Goal_Velocity": Register(104, 4, "twos"),
    "Profile_Velocity": Register(112, 4),
    "Goal_Position": Register(116, 4, "twos"),
    "Moving": Register(122, 1),
    "Present_Current": Register(126, 2, "twos"),
    "Present_Velocity": Register(128, 4, "twos"),
    "Present_Position": Register(132, 4, "twos"),
    "Present_Input_Voltage": Register(144, 2),
    "Present_Temperature": Register(146, 1),
}

_STS = {
    "Firmware_Major_Version": Register(0, 1),
    "Firmware_Minor_Version": Register(1, 1),
    "Model_Number": Register(3, 2),
    "ID": Register(5, 1),
    "Baud_Rate": Register(6, 1),
    "Return_Delay_Time": Register(7, 1),
    "Min_Position_Limit": Register(9, 2),
    "Max_Position_Limit": Register(11, 2),
    "P_Coefficient": Register(21, 1),
    "Homing_Offset": Register(31, 2, "bit11"),
    "Operating_Mode": Register(33, 1),
    "Torque_Enable": Register(40, 1),
    "Acceleration": Register(41, 1),
    "Goal_Position": Register(42, 2, "bit15"),
    "Goal_Time": Register(44, 2),
    "Goal_Velocity": Register(46, 2, "bit15"),
    "Torque_Limit": Register(48, 2),
    "Lock": Register(55, 1),
    "Present_Position": Register(56, 2, "bit15"),
    "Present_Velocity": Register(58, 2, "bit15"),
    "Present_Load": Register(60, 2, "bit10"),
    "Present_Voltage": Register(62, 1),
    "Present_Temperature": Register(63, 1),
    "Moving": Register(66, 1),
    "Present_Current": Register(69, 2, "bit15"),
}

MODELS: dict[str, ModelTable] = {
    "xl430-w250": ModelTable("xl430-w250", "dynamixel", 1060, 4096, dict(_X_SERIES)),
    "xl330-m288": ModelTable("xl330-m288", "dynamixel", 1200, 4096, dict(_X_SERIES)),
    "xl330-m077": ModelTable("xl330-m077", "dynamixel", 1190, 4096, dict(_X_SERIES)),
    "sts3215": ModelTable("sts3215", "feetech", 777, 4096, dict(_STS)),
}


def model_table(name: str) -> ModelTable:
    """The control table of a servo model by name; unknown names list the valid ones."""
    try:
        return MODELS[name.lower()]
    except KeyError:
        raise UnknownMotorError(
            f"unknown servo model {name!r}; valid models: {', '.join(MODELS)}") from None
