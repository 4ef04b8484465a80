"""`DynamixelBus`: ROBOTIS Dynamixel Protocol 2.0 servos through `dynamixel-sdk`."""

from __future__ import annotations

from typing import Any, Mapping

from robot_learn.hardware.bus import Motor
from robot_learn.hardware.errors import SDKMissingError
from robot_learn.hardware.sdk_bus import SDKBus


class DynamixelBus(SDKBus):
    """A Dynamixel X-series bus (XL430, XL330, ...) speaking Protocol 2.0."""

    vendor = "dynamixel"

    def __init__(self, port: str, motors: Mapping[str, Motor], **kwargs: Any) -> None:
        try:
            import dynamixel_sdk
        except ImportError as exc:
            raise SDKMissingError("dynamixel-sdk is not installed; pip install 'robot-learn[hardware]'") from exc
        self.sdk = dynamixel_sdk
        super().__init__(port, motors, **kwargs)

    def _new_packet_handler(self) -> Any:
        return self.sdk.PacketHandler(2.0)
