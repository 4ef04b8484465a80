"""``compile_inference`` for the VLA: each decoding round (an ensemble's members in one graph)
and the frozen frame encoder through ``torch.compile`` decode the eager path's tokens."""

import warnings
from pathlib import Path

import pytest
import torch
import torch._dynamo
from dd_fixtures import INSTRUCTIONS, batch_of, stats_of, synthetic_windows, tiny_config
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from robot_learn.policies import load_policy, make_policy
from robot_learn.policies.discrete_diffusion import DiscreteDiffusionConfig
from robot_learn.training.frame_pretraining import with_scene_labels

CONFIGS = Path(__file__).resolve().parents[3] / "configs" / "policy"
INSTRUCTION = "put the red cube in the blue bin"


def tokens(policy, obs, seed: int = 0) -> torch.Tensor:
    return policy.predict_tokens(obs, generator=torch.Generator().manual_seed(seed))


def tiny_vla(**changes):
    windows = synthetic_windows()
    torch.manual_seed(0)
    policy = make_policy("discrete_diffusion", tiny_config(token_temperature=1.0, **changes), stats_of(windows),
                         instructions=INSTRUCTIONS).eval()
    batch = batch_of(windows)
    return policy, {**batch["obs"], "instruction": batch["instruction"]}


def preset(name: str):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        config = with_scene_labels(instantiate(compose(config_name=name)))
    config = config.with_changes(frame_encoder={**config.frame_encoder, "vocab": sorted(set(INSTRUCTION.split()))})
    family = "discrete_diffusion_ensemble" if "ensemble" in name else "discrete_diffusion"
    torch.manual_seed(0)
    policy = make_policy(family, config, None, instructions=[INSTRUCTION]).eval()
    torch.manual_seed(1)
    obs = {"instruction": [INSTRUCTION], "state": torch.randn(1, 1, 10),
           "images": {c: torch.randint(0, 256, (1, 1, 96, 96, 3), dtype=torch.uint8)
                      for c in config.frame_encoder["cameras"]}}
    return policy, obs


def test_compile_inference_must_be_a_bool_and_survives_a_checkpoint(tmp_path):
    with pytest.raises(ValueError, match="compile_inference"):
        tiny_config(compile_inference="yes")
    assert "compile_inference" in DiscreteDiffusionConfig.inference_fields  # a resumed run may switch it
    policy, _ = tiny_vla(compile_inference=True)
    policy.save(tmp_path)
    assert load_policy(tmp_path).config.compile_inference is True


@pytest.mark.slow  # compiling takes 10-30 s on 2 cores
def test_a_compiled_vla_decodes_the_eager_tokens_and_sees_parameter_updates():
    torch._dynamo.reset()
    policy, obs = tiny_vla()
    eager = tokens(policy, obs)
    policy.set_compile_inference(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager would pass the comparison unseen
        compiled = tokens(policy, obs)
    assert policy.compiled_round.compiled is not None and not policy.compiled_round.failed
    assert torch.equal(compiled, eager)
    with torch.no_grad():
        policy.head[1].weight.add_(torch.randn_like(policy.head[1].weight))  # in place: the compiled graph sees it
    changed = tokens(policy, obs)
    policy.set_compile_inference(False)
    assert torch.equal(changed, tokens(policy, obs))
    assert not torch.equal(changed, compiled)
    torch._dynamo.reset()


@pytest.mark.slow  # compiling the frame encoder and the rounds takes about 40 s on 2 cores
@pytest.mark.parametrize("name", ["discrete_diffusion_pixels", "discrete_diffusion_pixels_ensemble"])
def test_the_compiled_pixel_presets_decode_the_eager_tokens(name):
    torch._dynamo.reset()
    policy, obs = preset(name)
    eager = tokens(policy, obs)
    policy.set_compile_inference(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        compiled = tokens(policy, obs)
    for call in (policy.compiled_round, policy.frame_encoder.compiled_readout):
        assert call.compiled is not None and not call.failed
    assert torch.equal(compiled, eager)
    torch._dynamo.reset()


def test_compile_inference_falls_back_to_eager_with_one_warning_when_no_compiler_works():
    import torch._inductor.config as inductor_config

    torch._dynamo.reset()
    policy, obs = tiny_vla()
    eager = tokens(policy, obs)
    policy.set_compile_inference(True)
    # inductor's own patch() (see tests/policies/test_fast_inference.py); no cached graph either.
    with inductor_config.patch({"cpp.cxx": ("/nonexistent/c++",), "fx_graph_cache": False}), \
            pytest.warns(RuntimeWarning, match="compile_inference: torch.compile failed.*decoding round") as caught:
        first = tokens(policy, obs)
        second = tokens(policy, obs)
    assert len([w for w in caught if "compile_inference" in str(w.message)]) == 1
    assert torch.equal(first, eager) and torch.equal(second, eager)
    torch._dynamo.reset()


def test_compile_inference_on_full_attention_warns_once_that_rounds_stay_eager():
    """Only prefix-cached rounds compile; a full-attention VLA decoding with compile_inference on
    says so at its first chunk and not again; building, loading or switching the flag off says
    nothing, and a prefix-cached VLA stays silent."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        policy, obs = tiny_vla(attention="full", compile_inference=True)  # built: no warning yet
        policy.set_compile_inference(False)
        tokens(policy, obs)  # eager by choice: nothing to say
        policy.set_compile_inference(True)
    with pytest.warns(UserWarning, match="attention=full, so its rounds run eagerly") as record:
        tokens(policy, obs)
        tokens(policy, obs)
    assert len([w for w in record if "rounds run eagerly" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prefix_cached, obs = tiny_vla(compile_inference=False)
        tokens(prefix_cached, obs)
