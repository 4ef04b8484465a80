"""The console in a real browser (Debian's chromium through Playwright) on a real
simulated session: takeover, hand back, labels, the help queue and e-stop, checked
against the episode store the session wrote."""

import json
import os
import shutil
import sys

import numpy as np
import pytest
from playwright.sync_api import expect, sync_playwright

from robot_learn.data import EpisodeStore
from robot_learn.loops import OPERATOR_PAUSE_MARK

sys.path.insert(0, os.path.dirname(__file__))
from console_fixtures import running_console, wait_until  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
if shutil.which(CHROMIUM) is None:  # `make test-main` installs it (target `chromium`)
    pytest.fail(f"{CHROMIUM} is missing; run `make chromium` (apt-get install chromium)", pytrace=False)

LIVE_S = 60  # longest wait for the page or the session (10 Hz) before failing


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    store_path = tmp_path_factory.mktemp("console") / "sim-0.zarr"
    with running_console(store_path) as (console, server):
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
            page = browser.new_page()
            page.set_default_timeout(LIVE_S * 1000)
            page.goto(server.url)
            yield console, server, page, store_path
            browser.close()


def tile(page, part=""):
    return page.locator(f"#tile-sim-0 {part}".strip())


def test_a_stalled_robot_asks_for_help_and_is_assigned_in_the_page(live):
    console, _, page, _ = live
    expect(tile(page, ".mode")).to_have_attribute("data-mode", "autonomous")
    page.wait_for_function("document.querySelector('#tile-sim-0 .frame').naturalWidth > 0")  # camera frames
    request = page.locator("#help li.open", has_text="sim-0")
    expect(request).to_be_visible()  # the stand-in froze; the takeover rule saw the stall
    request.locator("select.assign-to").select_option("bob")
    request.locator("button.assign").click()
    expect(request).to_contain_text("assigned to bob")
    [asked] = console.help.snapshot()
    assert asked["session"] == "sim-0" and asked["assigned_to"] == "bob" and asked["closed_at"] is None
    assert asked["reason"] in ("stall", "regress", "off_plan")
    assert console.sessions["sim-0"].snapshot()["flags"]  # the tile's critic flags


def test_takeover_by_click_and_hand_back_by_hotkey_record_intervention_on_exactly_those_steps(live):
    console, _, page, store_path = live
    session = console.sessions["sim-0"]
    page.locator("#operator").select_option("alice")
    tile(page, "button[data-cmd=takeover]").click()
    expect(tile(page, ".mode")).to_have_attribute("data-mode", "human")
    expect(page.locator("#help li.closed", has_text="taken over")).to_be_visible()
    wait_until(lambda: session.operator.human_steps >= 6, what="6 human steps")
    assert all(r["closed_at"] for r in console.help.snapshot())  # nobody is asked to help a robot in human hands
    tile(page, ".label-choice").select_option("good")
    tile(page, ".label-btn").click()
    page.keyboard.press("h")  # hand back
    expect(tile(page, ".mode")).to_have_attribute("data-mode", "autonomous")
    wait_until(lambda: len(session.operator.log) == 2 and session.operator.log[1].step >= 0, what="hand back")
    page.keyboard.press("r")  # reset: the episode ends and is committed
    wait_until(lambda: len(session.summaries) == 1, what="the episode to be committed")

    takeover, hand_back, reset = session.operator.log
    assert [c.command for c in session.operator.log] == ["takeover", "hand_back", "reset"]
    assert takeover.operator == "alice" and takeover.clicked_at is not None  # sent by the page
    assert takeover.clicked_at <= takeover.received_at <= takeover.applied_at <= takeover.first_human_at
    assert takeover.first_human_step == takeover.step
    index = session.summaries[0].index
    steps = EpisodeStore.open(store_path).episode(index)["steps"]
    expected = np.zeros(reset.step, dtype=bool)  # the reset step itself sends and records nothing
    expected[takeover.step:hand_back.step] = True
    assert 0 < takeover.step and hand_back.step - takeover.step >= 6
    np.testing.assert_array_equal(steps["intervention"], expected)
    # Human steps moved the arm (the hands' expert), the frozen stand-in only proposed holding.
    moved = np.abs(steps["action"] - steps["policy_action"])[expected].max(axis=1)
    assert (moved > 1e-4).mean() > 0.5
    meta = EpisodeStore.open(store_path).episode(index)["meta"]
    assert meta["source"] == "intervention" and meta["operator"] == "console"
    expect(tile(page, ".counts")).to_contain_text(f"human steps {hand_back.step - takeover.step}")
    labels = [json.loads(line) for line in session.labels_path.read_text().splitlines()]
    assert labels == [{**labels[0], "episode": index, "label": "good", "operator": "alice", "session": "sim-0"}]


def test_estop_ends_the_session_safely(live):
    console, _, page, store_path = live
    session = console.sessions["sim-0"]
    wait_until(lambda: session.snapshot()["episode"] == 2 and session.snapshot()["step"] >= 3, what="episode 2")
    tile(page, "button.estop").click()
    expect(tile(page, ".mode")).to_have_attribute("data-mode", "estopped")
    session.thread.join(LIVE_S)
    assert not session.thread.is_alive()
    assert not session.robot.is_connected  # the twin's simulator is closed: nothing can move it
    estop = session.operator.log[-1]
    assert estop.command == "estop" and estop.step >= 3
    # As the session defines a pause: the episode so far is committed and marked; the step at
    # which the e-stop reached the arbiter sent nothing and was not recorded.
    store = EpisodeStore.open(store_path)
    assert store.num_episodes == 2
    episode = store.episode(session.summaries[-1].index)
    assert episode["meta"]["operator"] == "console" + OPERATOR_PAUSE_MARK
    assert len(episode["steps"]["action"]) == estop.step
    assert not episode["steps"]["intervention"].any()
    # Later commands are refused, in the page and by the server, and change nothing.
    tile(page, "button[data-cmd=takeover]").click()
    expect(page.locator("#msg.error")).to_contain_text("estopped")
    assert session.operator.log[-1] is estop and EpisodeStore.open(store_path).num_episodes == 2
