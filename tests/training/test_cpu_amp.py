"""train.cpu_amp: bf16 autocast on a CPU with native bf16, fp32 with one warning on one without."""

import warnings

import pytest
import torch
from training_fixtures import build_store, make_sampler, make_tiny_policy

from robot_learn.training import TrainConfig, Trainer
from robot_learn.training.precision import autocast_dtype, cpu_runs_bf16


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("amp") / "s.zarr", num_episodes=3, length=20)


STEPS = 200


def _trainer(store, out_dir, cpu_amp, steps=5):
    cfg = TrainConfig(steps=steps, batch_size=16, warmup_steps=1, ckpt_every=0, log_every=5, out_dir=str(out_dir),
                      device="cpu", progress_bar=False, lr=1e-3, cpu_amp=cpu_amp)
    return Trainer(make_tiny_policy(store), make_sampler(store, 16, 0), cfg)


def _conv_output_dtypes(trainer):
    seen = set()
    hooks = [m.register_forward_hook(lambda _m, _i, out: seen.add(out.dtype))
             for m in trainer.policy.modules() if isinstance(m, torch.nn.Conv1d)]
    trainer._train_step()
    for hook in hooks:
        hook.remove()
    return seen


def test_off_by_default_trains_in_fp32(store, tmp_path):
    assert TrainConfig().cpu_amp is False
    assert _conv_output_dtypes(_trainer(store, tmp_path, cpu_amp=False)) == {torch.float32}


@pytest.mark.skipif(not cpu_runs_bf16(), reason="this CPU has no native bf16 (AVX512-BF16 or AMX)")
def test_on_runs_the_convolutions_in_bf16_keeps_fp32_weights_and_learns_as_fp32_does(store, tmp_path,
                                                                                      one_torch_thread):
    trainer = _trainer(store, tmp_path / "bf16", cpu_amp=True, steps=STEPS)
    assert trainer.autocast_dtype == torch.bfloat16
    assert _conv_output_dtypes(trainer) == {torch.bfloat16}
    assert all(p.dtype == torch.float32 and p.grad.dtype == torch.float32 for p in trainer.policy.parameters())
    first = trainer._train_step()[0]["loss"].item()
    bf16 = trainer.fit()["loss"]
    fp32 = _trainer(store, tmp_path / "fp32", cpu_amp=False, steps=STEPS).fit()["loss"]
    print(f"loss: first {first:.3f}, after {STEPS} steps bf16 {bf16:.3f}, fp32 {fp32:.3f}")
    # Measured when written (200 steps, the diffusion loss over the last 5): first 1.098, bf16 0.803, fp32 0.801
    assert bf16 < 0.8 * first and bf16 < 1.15 * fp32


def test_on_without_native_bf16_warns_once_and_trains_in_fp32(store, tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        trainer = _trainer(store, tmp_path, cpu_amp=True)
        dtypes = _conv_output_dtypes(trainer)  # a training step warns no more
        trainer._train_step()
    messages = [str(w.message) for w in record if "cpu_amp" in str(w.message)]
    assert len(messages) == 1 and messages[0].startswith("train.cpu_amp=true: this CPU has no native bf16")
    assert trainer.autocast_dtype is None and dtypes == {torch.float32}


def test_cuda_keeps_amp_and_ignores_cpu_amp():
    cuda = torch.device("cuda")  # only the choice is tested: no GPU needed
    assert autocast_dtype(True, False, cuda) == torch.bfloat16
    assert autocast_dtype(True, True, cuda) == torch.bfloat16
    assert autocast_dtype(False, True, cuda) is None
    assert autocast_dtype(True, False, torch.device("cpu")) is None  # amp alone never touches the CPU


def _resumable(store, out_dir, cpu_amp, steps):
    cfg = TrainConfig(steps=steps, batch_size=16, warmup_steps=1, ckpt_every=2, log_every=2, out_dir=str(out_dir),
                      device="cpu", progress_bar=False, lr=1e-3, cpu_amp=cpu_amp, resume=True)
    return Trainer(make_tiny_policy(store), make_sampler(store, 16, 0), cfg)


@pytest.mark.parametrize("switch", [True, False])
def test_resuming_under_other_precision_says_so_in_one_line(store, tmp_path, capsys, switch):
    _resumable(store, tmp_path, cpu_amp=False, steps=2).fit()
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a CPU without native bf16 warns that it stays in fp32
        _resumable(store, tmp_path, cpu_amp=switch, steps=4).fit()
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note: checkpoint")]
    if switch and cpu_runs_bf16():
        assert notes == ["note: checkpoint step_0000002 was trained in fp32; the steps from here run in bfloat16 "
                         "autocast (train.amp=True, train.cpu_amp=True)"], notes
    else:  # the same precision (without native bf16, cpu_amp stays fp32)
        assert notes == []
