"""The training settings ``robot-learn train`` uses (``configs/train/default.yaml``) as a
``TrainConfig``, for benchmarks that train in process. The dataclass's own defaults
(lr 1e-4, no warm-up) learn about 10x slower on these tasks than the CLI's lr 1e-3."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def cli_train_config(**overrides: Any):
    """``configs/train/default.yaml``'s ``TrainConfig`` with ``overrides`` on top."""
    from omegaconf import OmegaConf

    from robot_learn.training import TrainConfig

    settings = OmegaConf.to_container(OmegaConf.load(Path(__file__).parents[1] / "configs/train/default.yaml"))
    settings.pop("_target_")
    return TrainConfig(**{**settings, **overrides})


def demos_and_state_policy(out: Path, task: str, demos: int, steps: int, threads: int, policy_dir: str = "",
                           config: Any = None, obs_keys: tuple[str, ...] | None = None) -> tuple[Any, Path]:
    """The successful demos of ``task`` in ``out/demos.zarr`` (``demos`` expert episodes, recording
    ``obs_keys``, collected if missing) and a state policy trained ``steps`` on them
    (``config``: default the ``diffusion_state`` preset) in ``out/base``, unless ``policy_dir``
    names one already trained; returns (the demos' view, the policy's directory)."""
    from robot_learn.data import EpisodeStore, WindowSampler
    from robot_learn.envs.demos import DEFAULT_OBS_KEYS, collect_demos
    from robot_learn.policies import diffusion_state_config, load_policy
    from robot_learn.training import Trainer, build_policy_for_view

    demos_path = out / "demos.zarr"
    if not demos_path.exists():
        collect_demos(task, demos, demos_path, cameras=(), progress_bar=False, obs_keys=obs_keys or DEFAULT_OBS_KEYS)
    view = EpisodeStore.open(demos_path).view(success=True)
    if policy_dir:
        return view, Path(policy_dir)
    trained = out / "base" / "policy"
    if not (trained / "config.yaml").is_file():
        policy = build_policy_for_view(config or diffusion_state_config(), view)
        sampler = WindowSampler(view, obs_keys=policy.training_obs_keys, obs_horizon=policy.obs_horizon,
                                action_horizon=policy.action_horizon, batch_size=64)
        train = cli_train_config(steps=steps, batch_size=64, device="cpu", num_threads=threads,
                                 progress_bar=False, out_dir=str(out / "base"), ckpt_every=0)
        load_policy(Trainer(policy, sampler, train).fit()["final_policy_dir"]).save(trained)
    return view, trained


def start_run(parser: Any, out_default: str) -> tuple[Any, Path]:
    """Add ``--threads`` and ``--out`` to ``parser``, parse, set torch's threads, make the
    output folder and print the configuration; returns (args, the output folder)."""
    import platform
    import sys

    import torch

    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=out_default)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"config: {vars(args)}; python {platform.python_version()}, torch {torch.__version__}")
    return args, out
