"""``robot-learn eval``, ``train``'s evaluation and ``collect`` under a start spread and disturbances."""

import json

import pytest

from robot_learn.policies import diffusion_state_config, make_policy
from robot_learn.policies.compiled_call import compiled_precision, cpu_runs_bf16


def _saved_policy(path):
    config = diffusion_state_config(down_dims=[16, 32], action_horizon=8, execute_horizon=4, num_inference_steps=2)
    make_policy("diffusion", config).save(path)
    return path


def test_eval_runs_under_the_spread_and_disturbances_it_is_given(run_cli, tmp_path):
    _saved_policy(tmp_path / "ckpt")
    out = run_cli("eval", "checkpoint=ckpt", "task=stack", "episodes=2", "workers=1", "videos=0", "max_steps=12",
                  "start_spread=narrow", "disturbances=[nudge]", "out_dir=evalout", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((tmp_path / "evalout" / "report.json").read_text())
    stack = report["tasks"]["stack"]
    assert stack["info"]["conditions"] == "narrow + nudge"
    # Nudges land within the first 10 steps, and an untrained policy is never at the cube then.
    assert stack["disturbances"]["nudge"]["episodes"] == 2
    assert "stack ran under narrow + nudge: nudge in 2 episodes" in (tmp_path / "evalout" / "report.md").read_text()


@pytest.mark.parametrize("args, message", [
    (["start_spread=middle"], "start_spread: unknown start_spread 'middle'; valid: wide, medium, narrow"),
    (["disturbances=[shove]"], "disturbances: unknown disturbance 'shove'; valid: nudge, slip"),
    (["disturbances=nudge", "disturbance_probability=1.5"], "disturbance_probability must be <= 1, got 1.5"),
    (["disturbance_probability=abc"], "disturbance_probability must be a number, got 'abc'"),
    (["disturbances={a: 1}"], "Error merging override disturbances={a: 1}"),  # Hydra keeps it a list
])
def test_bad_conditions_are_one_line_errors_naming_the_key(user_error, tmp_path, args, message):
    _saved_policy(tmp_path / "ckpt")
    assert message in user_error("eval", "checkpoint=ckpt", "task=stack", *args)


def test_train_checks_its_evaluation_conditions_before_training(user_error):
    assert "eval.start_spread: unknown start_spread 'middle'" in user_error(
        "train", "task=stack", "policy=diffusion_state", "eval.start_spread=middle")


def test_collect_records_its_demos_under_the_narrow_spread(run_cli, tmp_path):
    import numpy as np

    from robot_learn.data import EpisodeStore
    from robot_learn.envs import make_env

    out = run_cli("collect", "task=bin_place", "episodes=2", "cameras=[]", "start_spread=narrow", "out=narrow.zarr",
                  timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    store = EpisodeStore.open(tmp_path / "narrow.zarr")
    assert store.num_episodes == 2  # the expert succeeds from narrow starts
    firsts = store.read("env_state")[store.episode_starts]
    env = make_env("bin_place", cameras=())
    for seed, first in enumerate(firsts):
        np.testing.assert_array_equal(first, env.reset(seed=seed, options={"start_spread": "narrow"})[0]["env_state"])
        assert not np.array_equal(first, env.reset(seed=seed)[0]["env_state"])


def test_collect_refuses_an_unknown_spread_naming_the_valid_ones(user_error):
    assert "start_spread: unknown start_spread 'middle'; valid: wide, medium, narrow" in user_error(
        "collect", "task=bin_place", "episodes=1", "start_spread=middle")


def test_eval_replans_as_often_as_execute_horizon_says(run_cli, tmp_path):
    from omegaconf import OmegaConf

    from robot_learn.cli.evaluate import set_execute_horizon
    from robot_learn.policies import load_policy

    policy = load_policy(_saved_policy(tmp_path / "ckpt"))
    set_execute_horizon(policy, OmegaConf.create({"execute_horizon": None}))
    assert policy.execute_horizon == 4  # null keeps the checkpoint's
    set_execute_horizon(policy, OmegaConf.create({"execute_horizon": 2}))
    assert policy.execute_horizon == 2
    out = run_cli("eval", "checkpoint=ckpt", "task=stack", "episodes=1", "workers=1", "videos=0", "max_steps=6",
                  "execute_horizon=1", "out_dir=evalout", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((tmp_path / "evalout" / "report.json").read_text())
    assert report["eval_config"]["execute_horizon"] == 1


def test_an_execute_horizon_past_the_chunk_is_a_one_line_error(user_error, tmp_path):
    _saved_policy(tmp_path / "ckpt")  # action_horizon 8, obs_horizon 2: at most 7 actions per chunk
    assert "execute_horizon=8 runs past this policy's chunk: valid 1..7" in user_error(
        "eval", "checkpoint=ckpt", "task=stack", "execute_horizon=8")


def test_eval_samples_with_the_sampler_and_steps_it_is_given(run_cli, tmp_path):
    from omegaconf import OmegaConf

    from robot_learn.cli.evaluate import set_sampler
    from robot_learn.policies import load_policy

    policy = load_policy(_saved_policy(tmp_path / "ckpt"))
    set_sampler(policy, OmegaConf.create({"sampler": None, "sampler_steps": None}))
    assert (type(policy.sampler).__name__, policy.num_inference_steps) == ("DDIMScheduler", 2)  # null keeps both
    set_sampler(policy, OmegaConf.create({"sampler": None, "sampler_steps": 5}))
    assert (type(policy.sampler).__name__, policy.num_inference_steps) == ("DDIMScheduler", 5)
    set_sampler(policy, OmegaConf.create({"sampler": "dpmsolver", "sampler_steps": 3}))
    assert (type(policy.sampler).__name__, policy.num_inference_steps) == ("DPMSolverMultistepScheduler", 3)
    out = run_cli("eval", "checkpoint=ckpt", "task=stack", "episodes=1", "workers=1", "videos=0", "max_steps=6",
                  "sampler=dpmsolver", "sampler_steps=3", "out_dir=evalout", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((tmp_path / "evalout" / "report.json").read_text())
    assert (report["eval_config"]["sampler"], report["eval_config"]["sampler_steps"]) == ("dpmsolver", 3)


def test_eval_starts_the_sampler_from_the_noise_scale_it_is_given(run_cli, tmp_path):
    from omegaconf import OmegaConf

    from robot_learn.cli.evaluate import set_sampler
    from robot_learn.policies import load_policy

    policy = load_policy(_saved_policy(tmp_path / "ckpt"))
    set_sampler(policy, OmegaConf.create({"sampler": None, "sampler_steps": None, "init_noise_scale": None}))
    assert policy.config.init_noise_scale == 1.0  # null keeps the checkpoint's
    set_sampler(policy, OmegaConf.create({"sampler": None, "sampler_steps": None, "init_noise_scale": 0}))
    assert policy.config.init_noise_scale == 0.0
    out = run_cli("eval", "checkpoint=ckpt", "task=stack", "episodes=1", "workers=1", "videos=0", "max_steps=6",
                  "init_noise_scale=0", "out_dir=evalout", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads((tmp_path / "evalout" / "report.json").read_text())["eval_config"]["init_noise_scale"] == 0


@pytest.mark.parametrize("args, message", [
    (["init_noise_scale=-1"], "init_noise_scale must be >= 0, got -1.0"),
    (["init_noise_scale=nan"], "init_noise_scale must be a finite number, got nan"),
    (["sampler=heun"], "unknown sampler 'heun'; valid choices: ddpm, ddim, dpmsolver, mip"),
    (["sampler_steps=0"], "sampler_steps must be >= 1, got 0"),
    (["sampler_steps=500"], "num_inference_steps must be in [1, 100], got 500"),
    (["sampler=mip"], "sampler 'mip' needs a policy trained with head 'mip'"),
])
def test_a_bad_sampler_is_a_one_line_error(user_error, tmp_path, args, message):
    _saved_policy(tmp_path / "ckpt")
    assert message in user_error("eval", "checkpoint=ckpt", "task=stack", *args)


def _saved_vla(path):
    from robot_learn.policies.discrete_diffusion import discrete_diffusion_state_config

    config = discrete_diffusion_state_config(hidden_dim=16, num_layers=1, num_heads=2, num_bins=16, decoding_rounds=2,
                                             use_language=False)
    make_policy("discrete_diffusion", config).save(path)
    return path


def test_eval_decodes_the_vla_in_the_rounds_and_with_the_compile_setting_it_is_given(run_cli, tmp_path):
    from omegaconf import OmegaConf

    from robot_learn.cli.evaluate import set_compile, set_sampler
    from robot_learn.policies import load_policy

    policy = load_policy(_saved_vla(tmp_path / "ckpt"))
    set_sampler(policy, OmegaConf.create({"sampler": None, "sampler_steps": None}))
    set_compile(policy, OmegaConf.create({"compile": None}))
    assert (policy.decode_settings.rounds, policy.config.compile_inference) == (2, False)  # null keeps both
    set_sampler(policy, OmegaConf.create({"sampler": None, "sampler_steps": 5}))
    set_compile(policy, OmegaConf.create({"compile": True}))
    assert (policy.decode_settings.rounds, policy.config.compile_inference) == (5, True)
    out = run_cli("eval", "checkpoint=ckpt", "task=stack", "episodes=1", "workers=1", "videos=0", "max_steps=6",
                  "sampler_steps=3", "compile=true", "out_dir=evalout", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "torch.compile failed" not in out.stderr
    report = json.loads((tmp_path / "evalout" / "report.json").read_text())
    assert (report["eval_config"]["sampler_steps"], report["eval_config"]["compile"]) == (3, True)
    assert report["policy"]["compiled"] == "fp32"  # what ran, beside what was asked


def test_compile_on_a_diffusion_policy_switches_its_denoiser_and_keeps_its_fast_path(tmp_path):
    from omegaconf import OmegaConf

    from robot_learn.cli.evaluate import set_compile
    from robot_learn.policies import load_policy

    policy = load_policy(_saved_policy(tmp_path / "ckpt"))
    set_compile(policy, OmegaConf.create({"compile": True}))
    assert (policy.config.compile_inference, policy.config.fast_inference) == (True, True)
    set_compile(policy, OmegaConf.create({"compile": "bf16"}))  # bf16 where the CPU runs it natively
    assert (policy.config.compile_inference, policy.config.compile_bf16) == (True, True)
    assert policy.compiled_denoiser.bf16 == cpu_runs_bf16()
    assert compiled_precision(policy) == ("bf16" if cpu_runs_bf16() else "fp32")  # the report's figure
    set_compile(policy, OmegaConf.create({"compile": True}))
    assert (policy.config.compile_bf16, policy.compiled_denoiser.bf16) == (False, False)
    assert compiled_precision(policy) == "fp32"
    set_compile(policy, OmegaConf.create({"compile": False}))
    assert compiled_precision(policy) is None


@pytest.mark.parametrize("args, message", [
    (["compile=maybe"], "compile must be true, false, bf16 or null, got 'maybe'"),
    (["compile=bf16"], "compile=bf16 applies to diffusion policies; this checkpoint is a discrete_diffusion policy"),
    (["init_noise_scale=0"], "init_noise_scale applies to diffusion policies; this checkpoint is a discrete_diffusion "
                             "policy"),
    (["sampler=ddim"], "sampler applies to diffusion policies (sampler_steps to them and to the discrete-diffusion VLA); "
                       "this checkpoint is a discrete_diffusion policy"),
])
def test_a_bad_vla_eval_setting_is_a_one_line_error(user_error, tmp_path, args, message):
    _saved_vla(tmp_path / "ckpt")
    assert message in user_error("eval", "checkpoint=ckpt", "task=stack", *args)
