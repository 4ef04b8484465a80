"""`FeetechBus`: Feetech STS/SCS servos (e.g. STS3215) through `feetech-servo-sdk` (scservo_sdk)."""

from __future__ import annotations

from typing import Any, Mapping

from robot_learn.hardware.bus import Motor
from robot_learn.hardware.errors import SDKMissingError
from robot_learn.hardware.sdk_bus import SDKBus


class FeetechBus(SDKBus):
    """A Feetech STS bus (little-endian registers, SDK protocol_end=0)."""

    vendor = "feetech"

    def __init__(self, port: str, motors: Mapping[str, Motor], **kwargs: Any) -> None:
        try:
            import scservo_sdk
        except ImportError as exc:
            raise SDKMissingError("feetech-servo-sdk is not installed; pip install 'robot-learn[hardware]'") from exc
        self.sdk = scservo_sdk
        super().__init__(port, motors, **kwargs)

    def _new_packet_handler(self) -> Any:
        return self.sdk.PacketHandler(0)  # 0: STS series byte order (little-endian)
