"""``CompiledCall(frozen=True)``: weights compiled in as constants, compiled afresh when a weight
changes; the diffusion policy's image encoders take this path under ``compile_inference``."""

import warnings

import pytest
import torch
import torch._dynamo
from policy_fixtures import STATE_DIM, tiny_config

from robot_learn.policies import make_policy
from robot_learn.policies.compiled_call import CompiledCall, weights_state
from robot_learn.policies.vision_encoder import VisionEncoder, set_channels_last


def encoder(seed: int) -> VisionEncoder:
    torch.manual_seed(seed)
    return VisionEncoder(24, 20, (8, 16), 1, 8, 16).eval()


def frames(seed: int = 1) -> torch.Tensor:
    torch.manual_seed(seed)
    return torch.randint(0, 256, (2, 24, 24, 3), dtype=torch.uint8)


@pytest.fixture(autouse=True)
def _strict_and_reset():
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager would pass every comparison unseen
        yield
    torch._dynamo.reset()


def test_a_frozen_call_gives_the_eager_output_and_compiles_afresh_after_each_weight_change():
    module, x = encoder(0), frames()
    call = CompiledCall(module, "the test encoder", frozen=True)
    with torch.no_grad():
        torch.testing.assert_close(call(x), module(x))
        graph = call.compiled
        call(x)
        assert call.compiled is graph  # unchanged weights: the same graph
        changes = {
            "an optimiser step": lambda: optimizer_step(module, x),
            "load_state_dict": lambda: module.load_state_dict(encoder(5).state_dict()),
            "another storage (channels-last)": lambda: set_channels_last(module, True),
        }
        for what, change in changes.items():
            before = module(x)
            change()
            after = module(x)
            assert not torch.allclose(before, after, atol=1e-4) or what.startswith("another"), what
            if not what.startswith("another"):  # the old graph really holds constants: it misses the change
                assert not torch.allclose(graph(x), after, atol=1e-4), what
            torch.testing.assert_close(call(x), after, msg=what)
            assert call.compiled is not graph, what
            graph = call.compiled


def optimizer_step(module: torch.nn.Module, x: torch.Tensor) -> None:
    optimizer = torch.optim.SGD(module.parameters(), lr=0.5)
    with torch.enable_grad():
        module(x).square().sum().backward()
    optimizer.step()


def test_a_frozen_call_runs_eagerly_while_autograd_is_on_and_needs_a_module():
    module, x = encoder(0), frames()
    call = CompiledCall(module, "the test encoder", frozen=True)
    out = call(x)
    assert out.requires_grad and call.compiled is None
    with pytest.raises(ValueError, match=r"frozen=True\) for the test function needs a module"):
        CompiledCall(lambda t: t, "the test function", frozen=True)


def test_two_modules_of_one_class_each_keep_their_own_frozen_weights():
    first, second, x = encoder(0), encoder(1), frames()
    calls = [CompiledCall(m, "the test encoder", frozen=True) for m in (first, second)]
    with torch.no_grad():
        outs = [call(x) for call in calls]
        torch.testing.assert_close(outs[0], first(x))
        torch.testing.assert_close(outs[1], second(x))
        assert not torch.allclose(outs[0], outs[1], atol=1e-4)
    assert weights_state(first) != weights_state(second)


def test_compile_inference_runs_an_image_policys_encoders_frozen_and_sees_new_weights():
    config = tiny_config(state_dims={"state": STATE_DIM}, camera_names=["front"], image_size=24, crop_size=20)
    eager = make_policy("diffusion", config, None).eval()
    policy = make_policy("diffusion", config.with_changes(compile_inference=True), None).eval()
    policy.load_state_dict(eager.state_dict())
    torch.manual_seed(2)
    obs = {"state": torch.randn(1, 2, STATE_DIM),
           "images": {"front": torch.randint(0, 256, (1, 2, 24, 24, 3), dtype=torch.uint8)}}

    def chunk(p):
        return p.predict_action_chunk(obs, generator=torch.Generator().manual_seed(0))

    torch.testing.assert_close(chunk(policy), chunk(eager), rtol=1e-5, atol=1e-5)
    assert policy.obs_encoder.vision_encoders["front"].compiled_forward.compiled is not None
    trained = make_policy("diffusion", config, None)
    eager.load_state_dict(trained.state_dict())
    policy.load_state_dict(trained.state_dict())
    torch.testing.assert_close(chunk(policy), chunk(eager.eval()), rtol=1e-5, atol=1e-5)
