"""``robot-learn train policy=diffusion_mip_state train=fast`` end to end at tiny sizes, the
``policy.head`` switch on the diffusion presets, and the head's bad input."""

import json

import pytest
import yaml
from hydra.utils import instantiate

from robot_learn.policies import load_policy

TINY_POLICY = ["policy.down_dims=[16,32]", "policy.action_horizon=8", "policy.execute_horizon=4",
               "policy.state_hidden_dims=[32]", "policy.state_feature_dim=16", "policy.timestep_embed_dim=16"]


@pytest.fixture(scope="module")
def mip_run(tmp_path_factory, run_cli_in):
    """A tiny full `robot-learn train` run of the MIP preset: 2 demos, 4 steps, 2 eval episodes."""
    tmp = tmp_path_factory.mktemp("mip")
    out = run_cli_in(tmp, "train", "task=stack", "policy=diffusion_mip_state", "train=fast", "data.episodes=2",
                     "data.cameras=[]", "eval.episodes=2", "eval.workers=2", "eval.videos=0", "eval.max_steps=6",
                     "run_dir=run", *TINY_POLICY, timeout=400)
    return tmp, out


def test_mip_preset_trains_evaluates_and_saves_a_mip_policy(mip_run):
    tmp, out = mip_run
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((tmp / "run" / "report.json").read_text())
    assert report["policy"]["preset"] == "diffusion_mip_state" and report["policy"]["type"] == "diffusion"
    assert report["tasks"]["stack"]["episodes"] == 2 and report["train"]["step"] == 4
    header = (tmp / "run" / "metrics.csv").read_text().splitlines()[0]
    assert "mip_first_pass" in header and "mip_second_pass" in header
    policy = load_policy(tmp / "run" / "policy")
    assert policy.config.head == "mip" and policy.num_inference_steps == 2


def test_the_saved_mip_policy_refuses_a_diffusion_sampler(mip_run):
    tmp, out = mip_run
    assert out.returncode == 0, out.stderr[-3000:]
    with pytest.raises(ValueError, match="sampler 'dpmsolver' needs a policy trained with head 'diffusion', but this "
                                         "policy's head is 'mip'"):
        load_policy(tmp / "run" / "policy").set_inference_scheduler("dpmsolver", 5)


@pytest.mark.parametrize(("preset", "extra", "head"), [("diffusion_state", "policy.head=mip", "mip"),
                                                       ("diffusion_state", "policy.denoiser=transformer", "diffusion"),
                                                       ("diffusion_mip_state", "policy.denoiser=transformer", "mip"),
                                                       ("diffusion_mip_pixels", "policy.mip_t_star=0.8", "mip")])
def test_presets_and_overrides_select_the_head(run_cli, preset, extra, head):
    out = run_cli("train", "--cfg", "job", f"policy={preset}", extra)
    assert out.returncode == 0, out.stderr
    config = instantiate(yaml.safe_load(out.stdout)["policy"])
    assert config.head == head
    if preset == "diffusion_mip_pixels":
        assert config.frame_encoder["cameras"] == ["front", "wrist"] and config.mip_t_star == 0.8
        assert "env_state" not in config.state_dims  # deployable: no privileged key


def test_an_unknown_head_lists_the_valid_ones(user_error):
    line = user_error("train", "train=fast", "policy.head=flow")
    assert "unknown head 'flow'; valid choices: diffusion, mip" in line
