"""`FeetechBus`: Feetech STS/SCS servos (e.g. STS3215) through `feetech-servo-sdk` (scservo_sdk)."""

from __future__ import annotations

from typing import Any, Mapping

from robot_learn.hardware.bus import Motor, Outcome
from robot_learn.hardware.control_table import model_table
from robot_learn.hardware.errors import SDKMissingError
from robot_learn.hardware.sdk_bus import SDKBus

MODEL_NUMBER = model_table("sts3215").register("Model_Number")  # address 3 on every STS/SCS model


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

    def _ping_once(self, motor_id: int) -> tuple[int, Outcome]:
        # scservo_sdk's ping() is a PING then a READ of the model number, and Feetech
        # status packets do not say which request they answer: a late PING reply is
        # taken for the READ's. One READ does the same job, and a late reply to an
        # earlier try of it carries the same model number.
        return self._read_once(motor_id, MODEL_NUMBER)
