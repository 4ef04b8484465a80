"""``CompiledCall``. Frozen (``frozen=True``): weights compiled in as constants, compiled afresh
when a weight changes; the diffusion policy's image encoders take this path under
``compile_inference``. Every call skips dynamo's guards on the module (they cost about 0.3 ms a
call at batch 1) and checks what of theirs our code changes at run time itself: each call
compiles its own code object, so no other instance's graph is reused, and a change of mode, dtype
or device compiles afresh (the layout switches: test_fast_inference.py).
These tests fail if a stale graph answers. ``set_bf16``: the call in bf16, frozen."""

import warnings

import pytest
import torch
import torch._dynamo
from policy_fixtures import STATE_DIM, tiny_config
from torch import nn

from robot_learn.policies import make_policy
from robot_learn.policies.compiled_call import CompiledCall, weights_state
from robot_learn.policies.vision_encoder import VisionEncoder, set_channels_last


def encoder(seed: int) -> VisionEncoder:
    torch.manual_seed(seed)
    return VisionEncoder(24, 20, (8, 16), 1, 8, 16).eval()


def frames(seed: int = 1) -> torch.Tensor:
    torch.manual_seed(seed)
    return torch.randint(0, 256, (2, 24, 24, 3), dtype=torch.uint8)


class Net(nn.Module):
    def __init__(self, width: int, seed: int) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.a, self.b = nn.Linear(6, width), nn.Linear(width, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.b(torch.relu(self.a(x)))
        return 2 * y if self.training else y  # what a mode-dependent layer (dropout) does


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


def test_modules_of_one_class_and_other_widths_each_get_their_own_graph():
    x = torch.randn(4, 6)
    nets = [Net(width, seed).eval() for width, seed in ((8, 0), (16, 1), (8, 2))]
    calls = [CompiledCall(net, f"net {i}") for i, net in enumerate(nets)]
    with torch.no_grad():
        for _ in range(2):
            for net, call in zip(nets, calls):
                torch.testing.assert_close(call(x), net(x))


def test_a_replaced_or_updated_parameter_reaches_the_graph_without_a_recompile():
    net, x = Net(8, 0).eval(), torch.randn(4, 6)
    call = CompiledCall(net, "net")
    with torch.no_grad():
        call(x)
        graph = call.compiled
        net.b.weight = nn.Parameter(torch.randn_like(net.b.weight))  # another tensor
        torch.testing.assert_close(call(x), net(x))
        net.a.bias.add_(1.0)  # in place
        torch.testing.assert_close(call(x), net(x))
        assert call.compiled is graph


def test_a_change_of_mode_or_dtype_compiles_afresh():
    net, x = Net(8, 0).eval(), torch.randn(4, 6)
    call = CompiledCall(net, "net")
    with torch.no_grad():
        torch.testing.assert_close(call(x), net(x))
        net.train()
        torch.testing.assert_close(call(x), net(x))  # the doubled output: not the eval graph's
        net.eval().double()
        torch.testing.assert_close(call(x.double()), net(x.double()))


def test_a_bf16_call_freezes_its_weights_stays_close_to_fp32_and_switches_back_exactly():
    net, x = Net(64, 0).eval(), torch.randn(4, 6)
    call = CompiledCall(net, "net")
    with torch.no_grad():
        eager = net(x)
        call.set_bf16(True)
        assert call.frozen
        out = call(x)
        assert out.dtype == torch.float32 and not torch.equal(out, eager)  # bf16 rounding, fp32 out
        torch.testing.assert_close(out, eager, atol=0.05, rtol=0.05)
        net.a.bias.add_(1.0)  # frozen: a weight change compiles afresh
        torch.testing.assert_close(call(x), net(x), atol=0.05, rtol=0.05)
        call.set_bf16(False)
        assert not call.frozen
        torch.testing.assert_close(call(x), net(x))


def test_bf16_needs_a_module():
    with pytest.raises(ValueError, match="needs a module or a module's method"):
        CompiledCall(lambda x: x + 1, "a function").set_bf16(True)
