import json

TINY = ["train=fast", "base_train_steps=4", "loop.episodes=2", "loop.train_steps=4", "loop.eval_episodes=2",
        "task.demos=3", "task.max_steps=40"]


def test_one_round_of_improve_runs_on_cpu_writes_reports_and_resumes(run_cli, tmp_path):
    out = run_cli("improve", "loop=hgdagger", "rounds=1", *TINY, "train.lr=1e-3", timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "round 1: continue training, 4 steps at lr 0.001" in out.stdout  # a state policy: train.lr
    run = tmp_path / "outputs/improve/stack_hgdagger"
    rounds = json.loads((run / "rounds.json").read_text())
    assert [r["round"] for r in rounds] == [0, 1]
    r1 = rounds[1]
    assert r1["collected_episodes"] == 2 and r1["human_seconds"] > 0
    assert r1["data_added"] == {"intervention": 2}
    assert 0 <= r1["ci_low"] <= r1["success_rate"] <= r1["ci_high"] <= 1
    assert (run / "success_vs_round.png").stat().st_size > 0
    assert (run / "success_vs_human_seconds.png").stat().st_size > 0
    assert "| 1 |" in (run / "rounds.md").read_text()
    # A killed round resumes: drop round 1's report, keep its episodes; rerun adds none.
    (run / "round_01/report.json").unlink()
    again = run_cli("improve", "loop=hgdagger", "rounds=1", *TINY, "train.lr=1e-3", timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    rounds = json.loads((run / "rounds.json").read_text())
    assert rounds[1]["collected_episodes"] == 2


def test_improve_composes_sources_per_round_from_config(run_cli, tmp_path):
    out = run_cli("improve", "loop=autonomous", "rounds=1", "loop.sources=[hitl,autonomous]",
                  "loop.source_weights=[1,1]", *TINY, "base_eval=false", timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "2 episodes from hitl 1, autonomous 1" in out.stdout
    from robot_learn.data import EpisodeStore

    store = EpisodeStore.open(tmp_path / "outputs/improve/stack_autonomous/collected.zarr")
    operators = [str(o) for o in store.meta["operator"]]
    assert operators[0] != "" and operators[1] == ""  # one episode each: the operator's, then none


def test_more_demos_round_under_the_efficacy_protocols_conditions(run_cli, tmp_path):
    """Narrow base demos; the round's whole demonstrations and its evaluation run wide, with nudges."""
    out = run_cli("improve", "loop=more_demos", "rounds=1", *TINY, "task.max_steps=100", "operator.budget_s=6",
                  "data.start_spread=narrow", "disturbances=[nudge]", "disturbance_probability=0.5", timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "(narrow)" in out.stdout and "under wide + nudge p=0.5" in out.stdout
    from robot_learn.data import EpisodeStore

    # Narrow demos get a store of their own: they never mix with the default (wide) ones.
    assert (tmp_path / "data/stack_demos_narrow.zarr").is_dir() and not (tmp_path / "data/stack_demos.zarr").exists()

    run = tmp_path / "outputs/improve/stack_more_demos"
    collected = EpisodeStore.open(run / "collected.zarr")
    assert set(collected.meta["policy_id"]) == {"teleop"} and collected.view().read("intervention")[0]
    r1 = json.loads((run / "rounds.json").read_text())[1]
    assert r1["human_seconds"] == 6.0 and 1 <= r1["collected_episodes"] < 2 + 1


def test_bad_round_conditions_are_one_line_errors_naming_the_key(user_error):
    assert "start_spread: unknown start_spread 'middle'; valid: wide, medium, narrow" in user_error(
        "improve", "start_spread=middle", *TINY)
    assert "disturbances: unknown disturbance 'shove'; valid: nudge, slip" in user_error(
        "improve", "disturbances=[shove]", *TINY)
    assert "data.start_spread: unknown start_spread 'middle'; valid: wide, medium, narrow" in user_error(
        "improve", "data.start_spread=middle", *TINY)
    assert "train_lr must be > 0 (or null: the policy's own), got 0" in user_error("improve", "loop.train_lr=0", *TINY)
    assert "success_max_steps must be null, 'demos' or a step count >= 1, got 'short'" in user_error(
        "improve", "loop=autonomous", "loop.success_max_steps=short", *TINY)


def test_reversed_loop_learns_stack_from_reversed_unstack_episodes_only(run_cli, tmp_path):
    # 70 steps: the unstack expert puts the cube down anywhere on the table, farther than beside it.
    tiny = [o for o in TINY if not o.startswith("task.max_steps=")] + ["task.max_steps=70"]
    out = run_cli("improve", "loop=reversed", "rounds=1", *tiny, "loop.easy_train_steps=4",
                  "loop.sources=[autonomous,reversed]", "loop.cycles=1", "loop.cycle_legs=2", "base_eval=false", timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    from robot_learn.data import EpisodeStore

    # Only the easy task's expert recorded anything (the cube put down anywhere, the default):
    # no stack demo store was made or read.
    assert [p.name for p in (tmp_path / "data").iterdir()] == ["unstack_demos_to_rest_drop_anywhere.zarr"]
    run = tmp_path / "outputs/improve/stack_reversed"
    base = EpisodeStore.open(run / "reversed_demos.zarr")
    assert set(base.meta["task"]) == {"stack"} and set(base.meta["source"]) == {"reversed"}
    collected = EpisodeStore.open(run / "collected.zarr")
    assert sorted(map(str, collected.meta["source"])) == ["reversed", "rollout"]
    assert set(collected.meta["task"]) == {"stack"}
    r1 = next(r for r in json.loads((run / "rounds.json").read_text()) if r["round"] == 1)
    assert r1["data_added"] == {"reversed": 1, "rollout": 1}
    assert r1["train_frames"]["base"] == base.num_frames and r1["train_frames"]["collected"] > 0
    assert r1["filter"]["filter"] == "kinematic" and r1["filter"]["episodes"] == 1
    assert r1["easy_task"] == "unstack" and 0 <= r1["easy_success_rate"] <= 1
    # One reset-free cycle: a 4-step policy fails its first leg (stack) within max_steps.
    assert r1["reset_free"] == {"cycles": 1, "consecutive_successes": [0], "longest": 0,
                                "mean_steps_to_success": None}
    report = (run / "rounds.md").read_text()
    assert "easy task unstack: success" in report and "reset-free: legs solved in a row [0]" in report


def test_reversed_loop_refuses_a_task_without_an_easy_reverse_and_hard_task_sources(user_error):
    line = user_error("improve", "loop=reversed", "task=unstack", *TINY)
    assert "task 'unstack' has no registered easy reverse task to learn it from; pairs (easy -> hard): " \
           "unstack -> stack, peg_remove -> peg_insert, bin_take -> bin_place" in line
    line = user_error("improve", "loop=reversed", "loop.sources=[hitl]", *TINY)
    assert "loop reversed cannot collect from ['hitl']" in line and "valid sources: autonomous, reversed" in line
    line = user_error("improve", "loop=reversed", "loop.drop_spot=far", *TINY)
    assert "unknown drop_spot 'far'; valid: beside, anywhere" in line


def test_unknown_loop_method_is_a_clear_error(user_error):
    line = user_error("improve", "loop.method=dagger", *TINY)
    assert "unknown loop method 'dagger'; valid methods: hgdagger, help_curated, recap, autonomous" in line


def test_unknown_loop_is_a_clear_error(user_error):
    line = user_error("improve", "loop=dagger", *TINY)
    assert "loop" in line and "hgdagger" in line and "recap" in line


def test_unknown_source_is_a_clear_error(user_error):
    line = user_error("improve", "loop.sources=[hitl,dreamed]", *TINY)
    assert "unknown source 'dreamed'; valid sources: hitl, autonomous, teleop, guided, reversed, imagined" in line


def test_negative_or_all_zero_source_weights_are_clear_errors(user_error):
    assert "source 'hitl' has weight -1.0; weights must be >= 0" in user_error(
        "improve", "loop.source_weights=[-1]", *TINY)
    assert "source weights are all zero" in user_error(
        "improve", "loop.sources=[hitl,autonomous]", "loop.source_weights=[0,0]", *TINY)
    assert "source_weights has 1 weights for 2 sources ['hitl', 'autonomous']" in user_error(
        "improve", "loop.sources=[hitl,autonomous]", "loop.source_weights=[1]", *TINY)


def test_bad_sampler_memory_is_a_one_line_error_naming_the_key(user_error):
    assert "data.cache_gb must be >= 0" in user_error("improve", "data.cache_gb=-1", *TINY)
