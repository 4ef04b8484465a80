"""ROS-free robot drivers: servo buses (Dynamixel, Feetech) over the vendors' SDKs,
calibration, safety, SO-101 and Koch arms, cameras, a fixed-rate control loop and
a servo emulator on a pty for tests and benchmarks.

Knows no learner: imports robot_learn.data (to record episodes) and nothing above it.
The vendor SDKs are imported only when a bus is built.
"""

from robot_learn.hardware.arm import ArmConfig, ServoArm, joints_to_array
from robot_learn.hardware.bus import Motor, ServoBus
from robot_learn.hardware.calibration import (
    NORM_MODES, MotorCalibration, calibration_path, load_calibration, normalize, save_calibration,
    unnormalize,
)
from robot_learn.hardware.cameras import CameraConfig, CameraError, OpenCVCamera
from robot_learn.hardware.control_loop import ChunkInterpolator, LoopStats, RateLoop
from robot_learn.hardware.control_table import MODELS, ModelTable, Register, model_table
from robot_learn.hardware.dynamixel_bus import DynamixelBus
from robot_learn.hardware.errors import (
    BusDisconnectedError, BusNotConnectedError, CalibrationError, CorruptReplyError, EStopError,
    MotorErrorStatus, MotorNotRespondingError, PortNotFoundError, SDKMissingError, ServoBusError,
    UnknownMotorError,
)
from robot_learn.hardware.feetech_bus import FeetechBus
from robot_learn.hardware.koch import koch_follower, koch_leader
from robot_learn.hardware.ports import find_port, list_ports
from robot_learn.hardware.registry import ROBOTS, make_arm
from robot_learn.hardware.robot import JOINT_NAMES, Robot
from robot_learn.hardware.safety import SafetyConfig, SafetyLayer, TorqueGuard
from robot_learn.hardware.so101 import so101_follower, so101_leader
from robot_learn.hardware.watchdog import Watchdog

__all__ = [
    "ArmConfig", "ServoArm", "joints_to_array", "Motor", "ServoBus", "DynamixelBus", "FeetechBus",
    "NORM_MODES", "MotorCalibration", "calibration_path", "load_calibration", "save_calibration",
    "normalize", "unnormalize", "CameraConfig", "CameraError", "OpenCVCamera",
    "ChunkInterpolator", "LoopStats", "RateLoop", "MODELS", "ModelTable", "Register", "model_table",
    "BusDisconnectedError", "BusNotConnectedError", "CalibrationError", "CorruptReplyError", "EStopError",
    "MotorErrorStatus", "MotorNotRespondingError", "PortNotFoundError", "SDKMissingError", "ServoBusError",
    "UnknownMotorError", "koch_follower", "koch_leader", "so101_follower", "so101_leader",
    "find_port", "list_ports", "ROBOTS", "make_arm", "JOINT_NAMES", "Robot",
    "SafetyConfig", "SafetyLayer", "TorqueGuard", "Watchdog",
]
