"""The key of a pretrained frame encoder's directory (data/frame_encoders/<tasks>_<key>)."""

from types import SimpleNamespace

from robot_learn.training.frame_features import encoder_settings_key
from robot_learn.training.precision import cpu_runs_bf16

LABELS = ["move_x", "move_y", "gripper"]


def _key(encoder: dict, pretraining: dict, tasks=("bin_place",), device="cpu") -> str:
    config = SimpleNamespace(frame_encoder={"label_names": LABELS, **encoder}, frame_pretraining=pretraining)
    return encoder_settings_key(config, list(tasks), device)


def test_a_default_written_out_is_the_same_encoder_and_any_other_value_is_another():
    """Defaults are filled in before hashing: a preset that spells out the default pretraining batch
    (64) shares the encoder of one that leaves it out, so a default changed in the code later
    cannot silently reuse an encoder pretrained under the old one."""
    plain = _key({}, {"steps": 100})
    assert _key({}, {"steps": 100, "batch_size": 64}) == plain
    assert _key({"channels": [32, 64]}, {"steps": 100}) == plain
    assert _key({}, {"steps": 100, "batch_size": 32}) != plain
    assert _key({"channels": [16, 32]}, {"steps": 100}) != plain
    assert _key({}, {"steps": 100}, tasks=("stack",)) != plain


def test_what_happens_after_pretraining_does_not_make_another_encoder():
    """What policies read (output) and the end-to-end fine-tuning are not part of pretraining."""
    plain = _key({}, {"steps": 100})
    assert _key({"output": "labels"}, {"steps": 100}) == plain
    assert _key({}, {"steps": 100, "finetune_steps": 500, "finetune_lr": 3e-4}) == plain


def test_the_precision_it_really_pretrains_in_makes_another_encoder_and_a_setting_that_falls_back_does_not():
    """cpu_bf16 pretrains in bf16 only on a CPU with native bf16: there it is another encoder. On
    a CPU without it, and on a GPU (cpu_bf16 is for CPUs), pretraining runs fp32, so the fp32
    encoder is reused rather than pretrained again under another name."""
    plain = _key({}, {"steps": 100})
    assert (_key({}, {"steps": 100, "cpu_bf16": True}) != plain) == cpu_runs_bf16()
    assert _key({}, {"steps": 100, "cpu_bf16": True}, device="cuda") == plain
    assert _key({}, {"steps": 100}, device="cuda") == plain
