"""The fast inference path (``fast_inference``: the U-Net's ``MatmulConv1d``, the image encoders channels-last)
gives the plain path's actions."""

import warnings
from pathlib import Path

import pytest
import torch
import torch._dynamo
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from policy_fixtures import tensor_batch, tiny_config
from torch.profiler import profile

from robot_learn.policies import DiffusionConfig, make_policy
from robot_learn.policies.checkpoint import load_policy
from robot_learn.policies.diffusion.matmul_conv import MatmulConv1d
from robot_learn.policies.vision_encoder import VisionEncoder
from robot_learn.training.frame_pretraining import with_scene_labels

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
INSTRUCTION = "put the red cube in the blue bin"
# Every CPU preset of the diffusion policy (the *_gpu presets are the same code, larger).
PRESETS = ["diffusion_state", "diffusion_image", "diffusion_pixels", "diffusion_mip_state", "diffusion_mip_pixels"]


def preset_policy(name: str):
    with initialize_config_dir(config_dir=str(CONFIGS / "policy"), version_base=None):
        config = with_scene_labels(instantiate(compose(config_name=name)))
    if config.frame_encoder:
        config = config.with_changes(frame_encoder={**config.frame_encoder, "vocab": sorted(set(INSTRUCTION.split()))})
    torch.manual_seed(0)
    return make_policy("diffusion", config, None, instructions=[INSTRUCTION]).eval()


def random_obs(policy, batch: int) -> dict:
    torch.manual_seed(1)
    obs: dict = {"instruction": [INSTRUCTION] * batch}
    for key, shape in policy.obs_shapes.items():
        if key.startswith("images/"):
            frames = torch.randint(0, 256, (batch, policy.obs_horizon, *shape), dtype=torch.uint8)
            obs.setdefault("images", {})[key.split("/", 1)[1]] = frames
        else:
            obs[key] = torch.randn(batch, policy.obs_horizon, *shape)
    return obs


def chunk(policy, obs) -> torch.Tensor:
    return policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(0))


def operators(run) -> set[str]:
    with profile() as prof:
        run()
    return {event.key for event in prof.key_averages()}


@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("name", PRESETS)
def test_fast_path_gives_the_plain_paths_actions(name, batch):
    policy = preset_policy(name)
    assert policy.config.fast_inference  # the default
    obs = random_obs(policy, batch)
    fast = chunk(policy, obs)
    policy.set_fast_inference(False)
    plain = chunk(policy, obs)
    assert fast.shape == (batch, policy.action_horizon, policy.action_dim)
    torch.testing.assert_close(fast, plain, rtol=1e-5, atol=1e-5)


def test_flag_off_runs_the_plain_convolutions_and_on_runs_the_matmul_path():
    obs = random_obs(make_policy("diffusion", tiny_config(), None).eval(), 1)
    off = make_policy("diffusion", tiny_config(fast_inference=False), None).eval()
    assert not any(m.matmul_inference for m in off.modules() if isinstance(m, MatmulConv1d))
    ops_off = operators(lambda: chunk(off, obs))
    assert "aten::convolution" in ops_off and "aten::unfold" not in ops_off
    on = make_policy("diffusion", tiny_config(), None).eval()
    on.load_state_dict(off.state_dict())
    ops_on = operators(lambda: chunk(on, obs))
    assert "aten::unfold" in ops_on
    # Only the transposed convolutions (upsampling) are left to aten::convolution.
    transposed = sum(isinstance(m, torch.nn.ConvTranspose1d) for m in on.modules())
    with profile() as prof:
        chunk(on, obs)
    calls = {e.key: e.count for e in prof.key_averages()}
    assert calls["aten::convolution"] == transposed * on.num_inference_steps
    torch.testing.assert_close(chunk(on, obs), chunk(off, obs), rtol=1e-5, atol=1e-5)


def test_training_takes_the_plain_convolutions_and_gets_the_same_loss(windows, stats):
    batch = tensor_batch(windows)
    losses = []
    for fast in (True, False):
        policy = make_policy("diffusion", tiny_config(fast_inference=fast), stats)
        torch.manual_seed(3)
        policy.load_state_dict(make_policy("diffusion", tiny_config(), stats).state_dict())
        policy.train()
        torch.manual_seed(4)
        ops = operators(lambda: losses.append(policy.compute_loss(batch)["loss"]))
        assert "aten::unfold" not in ops
    assert torch.equal(losses[0], losses[1])


def test_a_parameter_update_reaches_the_fast_path(windows, stats):
    policy = make_policy("diffusion", tiny_config(), stats)
    obs = random_obs(policy.eval(), 1)
    before = chunk(policy, obs)
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.5)
    policy.train()
    policy.compute_loss(tensor_batch(windows))["loss"].backward()
    optimizer.step()  # in-place update of every weight
    policy.eval()
    after = chunk(policy, obs)
    assert not torch.allclose(after, before, atol=1e-3)
    policy.set_fast_inference(False)
    torch.testing.assert_close(after, chunk(policy, obs), rtol=1e-5, atol=1e-5)
    # And weights loaded from elsewhere (load_state_dict copies in place).
    other = make_policy("diffusion", tiny_config(), stats)
    policy.set_fast_inference(True)
    policy.load_state_dict(other.state_dict())
    torch.testing.assert_close(chunk(policy, obs), chunk(other.eval(), obs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("kernel,stride,padding", [(5, 1, 2), (1, 1, 0), (3, 2, 1), (4, 1, 0)])
def test_matmul_conv_matches_conv1d(kernel, stride, padding, batch):
    torch.manual_seed(0)
    conv = MatmulConv1d(6, 10, kernel, stride=stride, padding=padding).eval()
    x = torch.randn(batch, 6, 8)
    plain = conv(x)
    conv.matmul_inference = True
    torch.testing.assert_close(conv(x), plain, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("setting,message", [({"groups": 2}, "groups=2"), ({"dilation": 2}, "dilation=(2,)"),
                                             ({"padding": "same"}, "padding='same'"),
                                             ({"padding_mode": "reflect"}, "padding_mode='reflect'")])
def test_matmul_conv_refuses_settings_it_cannot_compute(setting, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        MatmulConv1d(4, 4, 3, **{"padding": 1, **setting})


def test_fast_inference_must_be_a_bool_and_survives_a_checkpoint(tmp_path):
    with pytest.raises(ValueError, match="fast_inference must be true or false, got 'yes'"):
        DiffusionConfig(fast_inference="yes")
    policy = make_policy("diffusion", tiny_config(), None)
    policy.set_fast_inference(False)
    policy.save(tmp_path)
    loaded = load_policy(tmp_path)
    assert loaded.config.fast_inference is False
    assert not any(m.matmul_inference for m in loaded.modules() if isinstance(m, MatmulConv1d))


def test_compile_inference_falls_back_to_eager_with_one_warning_when_no_compiler_works():
    import torch._inductor.config as inductor_config

    torch._dynamo.reset()
    eager = make_policy("diffusion", tiny_config(down_dims=[16, 32]), None).eval()
    policy = make_policy("diffusion", tiny_config(down_dims=[16, 32], compile_inference=True), None).eval()
    policy.load_state_dict(eager.state_dict())
    obs = random_obs(policy, 1)
    # inductor's own patch(): monkeypatch's undo leaves its config module broken for later tests.
    # A cached graph would need no compiler, so the cache is off too.
    with inductor_config.patch({"cpp.cxx": ("/nonexistent/c++",), "fx_graph_cache": False}), \
            pytest.warns(RuntimeWarning, match="compile_inference: torch.compile failed") as caught:
        first = chunk(policy, obs)
        second = chunk(policy, obs)
    assert len([w for w in caught if "compile_inference" in str(w.message)]) == 1
    torch.testing.assert_close(first, chunk(eager, obs))
    torch.testing.assert_close(second, first)
    torch._dynamo.reset()


@pytest.mark.slow  # compiling takes 30-60 s on 2 cores
def test_compiled_denoiser_gives_the_plain_paths_actions_and_sees_parameter_updates(windows, stats):
    torch._dynamo.reset()
    policy = make_policy("diffusion", tiny_config(down_dims=[16, 32], compile_inference=True), stats)
    obs = random_obs(policy.eval(), 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager would pass the comparison unseen
        compiled = chunk(policy, obs)
    assert policy.compiled_denoiser.compiled is not None and not policy.compiled_denoiser.failed
    policy.set_fast_inference(False, compile=False)
    torch.testing.assert_close(compiled, chunk(policy, obs), rtol=1e-5, atol=1e-5)
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.5)
    policy.train()
    policy.compute_loss(tensor_batch(windows))["loss"].backward()
    optimizer.step()
    policy.eval()
    plain = chunk(policy, obs)
    policy.set_fast_inference(True, compile=True)
    torch.testing.assert_close(chunk(policy, obs), plain, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(plain, compiled, atol=1e-3)
    torch._dynamo.reset()



def backbone_convs(policy) -> list[torch.nn.Conv2d]:
    return [m for e in policy.modules() if isinstance(e, VisionEncoder) for m in e.backbone.modules()
            if isinstance(m, torch.nn.Conv2d)]


@pytest.mark.parametrize("name", ["diffusion_image", "diffusion_pixels"])
def test_fast_inference_runs_the_image_encoders_channels_last_in_eval_mode_only(name, tmp_path):
    policy = preset_policy(name)  # eval mode, fast_inference on
    convs = backbone_convs(policy)
    assert convs and all(c.weight.is_contiguous(memory_format=torch.channels_last) for c in convs)
    assert not all(c.weight.is_contiguous() for c in convs)  # really reordered, not 1x1 stems only
    params = list(policy.parameters())
    obs = random_obs(policy, 1)
    fast = chunk(policy, obs)
    policy.save(tmp_path)  # channels-last weights save as contiguous tensors
    torch.testing.assert_close(chunk(load_policy(tmp_path).eval(), obs), fast, rtol=1e-5, atol=1e-5)
    # Training mode puts every weight back in its usual order, as the same Parameter objects, so an
    # optimizer built before keeps working (fused AdamW needs the state's layout to match).
    policy.train()
    assert all(c.weight.is_contiguous() for c in convs)
    assert all(a is b for a, b in zip(params, policy.parameters()))
    optimizer = torch.optim.AdamW(params, lr=1e-3, fused=True)
    for p in params:
        p.grad = torch.ones_like(p)
    optimizer.step()
    policy.eval()
    for p in params:
        p.grad = torch.ones_like(p)
    policy.train()
    optimizer.step()
    assert not torch.allclose(chunk(policy.eval(), obs), fast, atol=1e-4)  # the updates reached the weights
    policy.set_fast_inference(False)
    assert all(c.weight.is_contiguous() for c in convs)


def test_compile_bf16_runs_every_compiled_call_of_a_pixel_preset_in_bf16_close_to_fp32():
    """``compile_bf16``: the denoiser and the frame encoder compiled in bf16 (weights frozen in)
    where the CPU runs bf16 natively; elsewhere fp32 after one warning."""
    from robot_learn.policies.compiled_call import CompiledCall, cpu_runs_bf16

    policy = preset_policy("diffusion_mip_pixels")
    obs = random_obs(policy, 1)
    policy.set_fast_inference(True, compile=True)
    fp32 = chunk(policy, obs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy.set_fast_inference(True, compile=True, bf16=True)
    calls = [v for m in policy.modules() for v in vars(m).values() if isinstance(v, CompiledCall)]
    assert {c.what for c in calls} >= {"the denoiser", "the frame encoder"}
    assert all(c.bf16 == cpu_runs_bf16() for c in calls)
    assert any("no native bf16" in str(w.message) for w in caught) != cpu_runs_bf16()
    bf16 = chunk(policy, obs)
    assert not any(c.failed for c in calls)
    assert torch.equal(bf16, fp32) != cpu_runs_bf16()
    torch.testing.assert_close(bf16, fp32, atol=0.05, rtol=0.05)


def test_a_compiled_pixel_policy_follows_its_layout_switches_and_mode():
    """dynamo's module guards are skipped (CompiledCall): after a compiled chunk, switching the
    matmul path or the encoders' channels-last layout, or the mode, must not leave a stale graph
    answering (a channels-last graph fed contiguous weights raised before module_state read the
    switches)."""
    policy = preset_policy("diffusion_mip_pixels")
    obs = random_obs(policy, 1)
    policy.set_fast_inference(True, compile=True)
    chunk(policy, obs)
    for fast in (False, True):
        graph = policy.compiled_denoiser.compiled
        policy.set_fast_inference(fast)  # the matmul path and every encoder's layout
        compiled = chunk(policy, obs)
        assert policy.compiled_denoiser.compiled is not graph  # the switch seen: compiled afresh
        policy.set_fast_inference(fast, compile=False)
        torch.testing.assert_close(compiled, chunk(policy, obs), rtol=1e-5, atol=1e-5)
        policy.set_fast_inference(fast, compile=True)
    policy.train()  # compiled calls in training mode: channels-last off, MatmulConv1d plain
    compiled = chunk(policy, obs)
    policy.set_fast_inference(True, compile=False)
    torch.testing.assert_close(compiled, chunk(policy, obs), rtol=1e-5, atol=1e-5)
    assert not policy.compiled_denoiser.failed and not policy.frame_encoder.compiled_readout.failed


def test_the_causal_transformer_denoiser_compiles_whole():
    policy = make_policy("diffusion", tiny_config(denoiser="transformer", compile_inference=True), None).eval()
    assert policy.config.transformer_causal
    torch.manual_seed(3)
    obs = {key: torch.randn(1, policy.obs_horizon, dim) for key, dim in policy.config.state_dims.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager fails here
        compiled = chunk(policy, obs)
    assert policy.compiled_denoiser.compiled is not None and not policy.compiled_denoiser.failed
    policy.set_fast_inference(True, compile=False)
    torch.testing.assert_close(compiled, chunk(policy, obs), rtol=1e-5, atol=1e-5)
