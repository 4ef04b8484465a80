"""``robot-learn eval``: evaluate a saved policy (Hydra app, config eval.yaml)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any, Iterator, Sequence

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf, open_dict

from robot_learn.cli.hydra_app import run_hydra_app
from robot_learn.cli.settings import device_setting, eval_settings, setting

GUIDES = ("none", "pcg")


def eval_app(cfg: DictConfig) -> int:
    """Load ``cfg.checkpoint``, evaluate it on ``cfg.task`` and write the report."""
    from robot_learn.cli.policy_dirs import load_policy_for_task, resolve_policy_dir
    from robot_learn.cli.tasks import check_task
    from robot_learn.evaluation.task_fit import video_cameras
    from robot_learn.evaluation import evaluate, write_report
    from robot_learn.evaluation.rollout import policy_cameras
    from robot_learn.policies.compiled_call import compiled_precision
    from robot_learn.training.distributed import resolve_device

    task = check_task(cfg.task.name)
    settings = eval_settings(cfg)
    guide = guide_settings(cfg)
    device = resolve_device(device_setting(cfg, "device"))  # "auto" -> cuda if there is one
    # Frames at the checkpoint's camera size unless the command names task.image_size.
    named_size = overridden("task.image_size")
    policy = load_policy_for_task(cfg.checkpoint, task, cameras=tuple(cfg.task.cameras),
                                  image_size=int(cfg.task.image_size) if named_size else None,
                                  expected_type=cfg.policy_type, device=device)
    size = policy_cameras(policy)[1]
    if size is not None and not named_size:
        with open_dict(cfg):  # the report's eval_config says what was rendered
            cfg.task.image_size = size
    warn_if_pretraining_layouts(policy, settings.seed, settings.episodes)
    set_execute_horizon(policy, cfg)
    set_sampler(policy, cfg)
    set_compile(policy, cfg)
    predict = None
    if guide is not None:
        from robot_learn.training.phase_guide import load_phase_guide

        predict = load_phase_guide(guide[0], policy, task, guide[1])
    out_dir = Path(cfg.out_dir or HydraConfig.get().runtime.output_dir)
    with saved_episodes(cfg) as store:
        result = evaluate(policy, task, out_dir=out_dir, progress_bar=True, **settings.evaluate_kwargs(),
                          **video_cameras(task), predict=predict, save_to=store,
                          save_meta={"policy_id": str(cfg.checkpoint)})
        if store is not None:
            print(f"{len(result.episodes)} episodes appended to {store.path} ({store.num_episodes} in it now)")
    paths = write_report(result, out_dir, title=f"Evaluation of {cfg.checkpoint} on {task}",
                         extra={"checkpoint": str(resolve_policy_dir(cfg.checkpoint)),
                                "policy": {"type": policy.name, "compiled": compiled_precision(policy)},
                                "eval_config": OmegaConf.to_container(cfg, resolve=True)})
    s = result.summary
    print(f"{task}: {s.describe()}"
          + (f"; {result.diverged_episodes} ended by a diverged simulation" if result.diverged_episodes else ""))
    if predict is not None:
        print(f"pcg guided {predict.guided_chunks} of {predict.chunks} chunks")
    print(f"report: {paths['markdown']}")
    return 0


@contextlib.contextmanager
def saved_episodes(cfg: DictConfig) -> Iterator[Any]:
    """The store ``save_episodes`` names, open for appending (created if missing), or None."""
    from robot_learn.data import EpisodeStore

    path = setting(cfg, "save_episodes", str, optional=True)
    if path is None:
        yield None
        return
    store = EpisodeStore.open_or_create(path)
    try:
        yield store
    finally:
        store.close()


def overridden(key: str) -> bool:
    """Whether the command line sets ``key`` (``key=...``, ``+key=...`` or ``++key=...``)."""
    return any(o.split("=", 1)[0].lstrip("+") == key for o in HydraConfig.get().overrides.task)


def warn_if_pretraining_layouts(policy, seed: int, episodes: int) -> None:
    """One warning when a policy with a pretrained frame encoder is evaluated on seeds its
    encoder's rendered scenes use (resets from 2,000,000, expert episodes from 3,000,000): those
    layouts may have been in its pretraining, so they are not held out."""
    from robot_learn.envs.scene_frames import EXPERT_SEEDS, RESET_SEEDS, overlaps_pretraining_seeds

    if getattr(policy, "frame_encoder", None) is not None and overlaps_pretraining_seeds(seed, episodes):
        print(f"warning: seeds {seed}..{seed + episodes - 1} overlap the seeds frame encoders pretrain on "
              f"(scene resets from {RESET_SEEDS:,}, expert episodes from {EXPERT_SEEDS:,}): these layouts may not be "
              f"held out from this policy's encoder; held-out seeds start at 1,000,000", file=sys.stderr)


def set_execute_horizon(policy, cfg: DictConfig) -> None:
    """Replan every ``execute_horizon`` actions instead of the checkpoint's (null keeps it);
    CLIError naming the key and the valid range when the chunk is too short."""
    from robot_learn.cli.hydra_app import CLIError
    from robot_learn.policies.config_checks import longest_execute_horizon

    steps = setting(cfg, "execute_horizon", int, minimum=1, optional=True)
    if steps is None:
        return
    config = policy.config
    longest = longest_execute_horizon(config)
    if steps > longest:
        raise CLIError(f"execute_horizon={steps} runs past this policy's chunk: valid 1..{longest} "
                       f"(action_horizon {config.action_horizon}, obs_horizon {config.obs_horizon})")
    config.execute_horizon = steps


def set_sampler(policy, cfg: DictConfig) -> None:
    """Sample with ``sampler`` (``ddim``, ``dpmsolver``, ``ddpm``; ``mip`` for a MIP-head policy)
    in ``sampler_steps`` network calls instead of the checkpoint's (null keeps each); for the
    discrete-diffusion VLA ``sampler_steps`` is its decoding rounds K. CLIError naming the key
    and the valid choices."""
    from robot_learn.cli.hydra_app import CLIError
    from robot_learn.policies.diffusion.configuration_diffusion import INFERENCE_SCHEDULERS
    from robot_learn.policies.diffusion.mip_head import MIP_SAMPLER

    kind = setting(cfg, "sampler", str, choices=(*INFERENCE_SCHEDULERS, MIP_SAMPLER), optional=True)
    steps = setting(cfg, "sampler_steps", int, minimum=1, optional=True)
    set_init_noise(policy, setting(cfg, "init_noise_scale", float, minimum=0, optional=True))
    if kind is None and steps is None:
        return
    if kind is None and hasattr(policy, "set_decoding"):  # the VLA: its network calls are its decoding rounds
        policy.set_decoding(rounds=steps)
        return
    if not hasattr(policy, "set_inference_scheduler"):
        raise CLIError(f"sampler applies to diffusion policies (sampler_steps to them and to the discrete-diffusion "
                       f"VLA); this checkpoint is a {policy.name} policy")
    if kind is None:
        kind = MIP_SAMPLER if policy.config.head == "mip" else policy.config.inference_scheduler
    try:
        policy.set_inference_scheduler(kind, steps)
    except ValueError as error:
        raise CLIError(f"sampler={kind} sampler_steps={steps}: {error}") from None


def set_init_noise(policy, scale: float | None) -> None:
    """Start a diffusion policy's sampler from ``scale`` times Gaussian noise (``init_noise_scale``; None keeps
    the checkpoint's); CLIError for any other policy."""
    from robot_learn.cli.hydra_app import CLIError

    if scale is None:
        return
    if not hasattr(policy.config, "init_noise_scale"):
        raise CLIError(f"init_noise_scale applies to diffusion policies; this checkpoint is a {policy.name} policy")
    policy.config = policy.config.with_changes(init_noise_scale=scale)


def set_compile(policy, cfg: DictConfig) -> None:
    """``compile``: true runs the policy's network calls through ``torch.compile``
    (``compile_inference``: the diffusion denoiser and image encoders or the VLA's decoding rounds,
    and the frame encoder), bf16 runs a diffusion policy's compiled calls in bf16 too
    (``compile_bf16``), false runs them eagerly, null keeps the checkpoint's setting."""
    from robot_learn.cli.hydra_app import CLIError
    value = OmegaConf.select(cfg, "compile", throw_on_missing=True)
    if value is None:
        return
    if not (isinstance(value, bool) or value == "bf16"):
        raise CLIError(f"compile must be true, false, bf16 or null, got {value!r}")
    if hasattr(policy, "set_fast_inference"):
        policy.set_fast_inference(policy.config.fast_inference, compile=bool(value), bf16=value == "bf16")
    elif hasattr(policy, "set_compile_inference") and value != "bf16":
        policy.set_compile_inference(value)
    else:
        what = "compile=bf16 applies to diffusion policies" if hasattr(policy, "set_compile_inference") else \
            "compile applies to diffusion and discrete-diffusion policies"
        raise CLIError(f"{what}; this checkpoint is a {policy.name} policy")


def guide_settings(cfg: DictConfig) -> tuple[str, object] | None:
    """``(guide_dir, PCGSettings)`` for ``guide=pcg``, None for ``guide=none``; CLIError naming the key."""
    from robot_learn.cli.hydra_app import CLIError
    from robot_learn.policies.diffusion.phase_guidance import PCGSettings

    if setting(cfg, "guide", str, choices=GUIDES) == "none":
        return None
    guide_dir = setting(cfg, "guide_dir", str, optional=True)
    if guide_dir is None:
        raise CLIError("guide=pcg needs guide_dir=<a guide directory with dynamics/ and prototypes/>")
    return guide_dir, PCGSettings(scale=setting(cfg, "guide_scale", float, minimum=0))


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn eval``."""
    return run_hydra_app(eval_app, "eval", argv, "robot-learn eval")
