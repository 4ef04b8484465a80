"""Console latency: from a takeover click in the browser to the first human step.

Starts the console on one simulated session (the MuJoCo 'stack' twin, the stand-in
policy frozen so the episode runs on, the simulated operator's expert as the hands),
opens it in Debian's chromium through Playwright and clicks "Take over" ``--clicks``
times, each after a random fraction of a control period, handing back after
``--human-steps`` human steps. For each click it reports, from the console's own log:

- click -> server: the browser's click time (``event.timeStamp``, wall clock) to the
  server receiving the POST;
- server -> control step: until the session's next step handed the request to the
  arbiter (on average half a control period);
- control step -> human action: until the hands' first action went to the arm;
- click -> first human step: the sum, the figure in docs/benchmarks.md.

After an e-stop commits the episodes, each click's first human step is looked up in
the store: it must be recorded with ``intervention`` set (the run fails otherwise);
the store's ``timestamp`` of that step (when its observation was taken, before the
request was read) is printed too.

    MUJOCO_GL=egl OMP_NUM_THREADS=1 nice -n 19 .venv/bin/python benchmarks/bench_console.py --clicks 30
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

import numpy as np


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.002)


def summary(name: str, values_ms: list[float]) -> str:
    v = np.asarray(values_ms)
    return (f"{name:<32} median {np.median(v):7.1f} ms   p95 {np.percentile(v, 95):7.1f} ms   "
            f"min {v.min():7.1f}   max {v.max():7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=30)
    parser.add_argument("--rate-hz", type=float, default=10.0)
    parser.add_argument("--human-steps", type=int, default=3, help="human steps before each hand back")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()

    import torch
    from playwright.sync_api import expect, sync_playwright

    from robot_learn.console import ConsoleServer, OperatorConsole
    from robot_learn.console.simulated import simulated_setup
    from robot_learn.data import EpisodeStore

    torch.set_num_threads(1)
    rng = random.Random(args.seed)
    period = 1.0 / args.rate_hz
    print(f"config: clicks={args.clicks} rate_hz={args.rate_hz} human_steps={args.human_steps} task=stack "
          f"camera=front 64px, one session, chromium headless; cpus={os.cpu_count()} "
          f"load={os.getloadavg()[0]:.1f} nice={os.nice(0)}")
    store_path = Path(tempfile.mkdtemp(prefix="bench_console_")) / "sim-0.zarr"
    setup = simulated_setup("stack", store_path, freeze_fraction=1.0, freeze_after=(0, 0),
                            max_steps=100_000, rate_hz=args.rate_hz, stall_steps=100_000)
    console = OperatorConsole({"sim-0": setup}, ["bench"], ["good"])
    console.start()
    server = ConsoleServer(console).start_background()
    session = console.sessions["sim-0"]
    op = session.operator
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, headless=True)
            page = browser.new_page()
            page.goto(server.url)
            mode = page.locator("#tile-sim-0 .mode")
            expect(mode).to_have_attribute("data-mode", "autonomous", timeout=60_000)
            for _ in range(args.clicks):
                time.sleep(rng.uniform(0, period))  # click at a random phase of the control loop
                page.locator("#tile-sim-0 button[data-cmd=takeover]").click()
                wait_until(lambda: op.log and op.log[-1].command == "takeover" and op.log[-1].first_human_at,
                           60, "the first human step")
                done = op.human_steps + args.human_steps
                wait_until(lambda: op.human_steps >= done, 60, "human steps")
                page.locator("#tile-sim-0 button[data-cmd=hand_back]").click()
                wait_until(lambda: op.log[-1].command == "hand_back" and op.log[-1].applied_at, 60, "the hand back")
                time.sleep(2 * period)  # the policy drives again before the next click
            page.locator("#tile-sim-0 button.estop").click()
            session.thread.join(60)
            browser.close()
    finally:
        console.stop()
        server.stop()

    takeovers = [r for r in op.log if r.command == "takeover"]
    store = EpisodeStore.open(store_path)
    to_server, to_step, to_action, total, from_observed = [], [], [], [], []
    for r in takeovers:
        to_server.append(1e3 * (r.received_at - r.clicked_at))
        to_step.append(1e3 * (r.applied_at - r.received_at))
        to_action.append(1e3 * (r.first_human_at - r.applied_at))
        total.append(1e3 * (r.first_human_at - r.clicked_at))
        steps = store.episode(session.episode_index[r.episode])["steps"]
        if not steps["intervention"][r.first_human_step] or (r.first_human_step and
                                                             steps["intervention"][r.first_human_step - 1]):
            raise SystemExit(f"click at episode {r.episode} step {r.first_human_step}: the store does not record "
                             "the first human step there")
        from_observed.append(1e3 * (steps["timestamp"][r.first_human_step] - r.clicked_at))
    print(f"{len(takeovers)} clicks; every first human step is the store's first intervention step of its takeover")
    print(summary("click -> server", to_server))
    print(summary("server -> control step", to_step))
    print(summary("control step -> human action", to_action))
    print(summary("click -> first human step", total))
    print(summary("click -> that step's obs stamp", from_observed))


if __name__ == "__main__":
    main()
