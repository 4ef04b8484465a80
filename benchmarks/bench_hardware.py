"""Servo-bus and control-loop timing against the pty emulator (NOT real hardware).

For each vendor (Feetech STS3215 via scservo_sdk, Dynamixel XL430/XL330 via
dynamixel_sdk), 6 motors, bus configured for 1 Mbps:
  * SYNC_READ latency of Present_Position (p50/p95),
  * the achievable rate of a read-then-write control step run flat out,
  * loop jitter at 30 Hz and 100 Hz with that step.

A pty has no baud rate, so wire time is not simulated: at a real 1 Mbps a 6-motor
STS sync read moves ~60 bytes (~0.6 ms) plus each servo's return delay. The
emulator also runs as a thread in this process and shares the GIL with the SDK.

Usage: .venv/bin/python benchmarks/bench_hardware.py [--reads 300] [--seconds 3]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from robot_learn.hardware import DynamixelBus, FeetechBus, RateLoop
from robot_learn.hardware.emulator import ServoBusEmulator
from robot_learn.hardware.koch import koch_motors
from robot_learn.hardware.so101 import so101_motors

VENDORS = {
    "feetech": (FeetechBus, so101_motors()),
    "dynamixel": (DynamixelBus, koch_motors("follower")),
}


def bench_vendor(vendor: str, reads: int, seconds: float) -> dict[str, float]:
    bus_cls, motors = VENDORS[vendor]
    with ServoBusEmulator(vendor, [(m.id, m.model) for m in motors.values()]) as emu:
        bus = bus_cls(emu.port, motors, baudrate=1_000_000, timeout_ms=50)
        bus.connect()
        bus.enable_torque()
        lat = []
        for _ in range(reads):
            t = time.perf_counter()
            bus.sync_read("Present_Position")
            lat.append(time.perf_counter() - t)
        lat_ms = np.asarray(lat) * 1e3

        def step(_: int) -> None:
            pos = bus.sync_read("Present_Position")
            bus.sync_write("Goal_Position", {n: v + 1 for n, v in pos.items()})

        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            step(n)
            n += 1
        flat_hz = n / (time.perf_counter() - t0)
        loops = {hz: RateLoop(hz).run(step, duration_s=seconds).summary() for hz in (30, 100)}
        bus.disconnect()
    out = {"sync_read_p50_ms": float(np.percentile(lat_ms, 50)),
           "sync_read_p95_ms": float(np.percentile(lat_ms, 95)),
           "max_step_rate_hz": flat_hz}
    for hz, s in loops.items():
        out[f"{hz}hz_achieved"] = s["achieved_hz"]
        out[f"{hz}hz_jitter_p50_ms"] = s["jitter_p50_ms"]
        out[f"{hz}hz_jitter_p95_ms"] = s["jitter_p95_ms"]
        out[f"{hz}hz_overruns"] = s["overruns"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reads", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    print("EMULATOR FIGURES (pty + in-process emulator thread), not measurements of real servos.")
    print(f"config: 6 motors per bus, baudrate 1000000 (not enforced by a pty), reads={args.reads}, "
          f"seconds per loop={args.seconds}, python {platform.python_version()}, {platform.machine()}")
    results = {v: bench_vendor(v, args.reads, args.seconds) for v in VENDORS}
    keys = list(next(iter(results.values())))
    print(f"{'metric':<24}" + "".join(f"{v:>12}" for v in results) + f"{'fee/dxl':>10}")
    for k in keys:
        a, b = results["feetech"][k], results["dynamixel"][k]
        ratio = f"{a / b:10.2f}" if b else f"{'-':>10}"
        print(f"{k:<24}{a:12.3f}{b:12.3f}{ratio}")


if __name__ == "__main__":
    main()
