"""The training loop: AdamW + warmup/cosine LR + grad clipping + EMA, with exact resume and DDP.

One step reads top to bottom in :meth:`Trainer._train_step`:
sample a window batch -> tensors -> loss (through the DDP-wrapped module) ->
backward -> clip -> optimiser and LR step -> EMA update.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
import yaml
from diffusers.training_utils import EMAModel
from torch import nn
from tqdm.auto import tqdm

from robot_learn.data.prefetch import PrefetchingSampler
from robot_learn.policies import Policy, load_policy, to_torch
from robot_learn.training.checkpoint import (
    CHECKPOINT_DIRNAME,
    EMA_DIRNAME,
    POLICY_DIRNAME,
    STATE_FILENAME,
    CheckpointError,
    check_resume_steps,
    config_differences,
    decode_state,
    encode_state,
    find_latest_checkpoint,
    load_trainer_state,
    remove_partial_checkpoints,
    write_checkpoint,
)
from robot_learn.training.config import TrainConfig
from robot_learn.training.data_checks import check_rank_samplers_differ, check_sampler_data
from robot_learn.training.distributed import DistContext, init_distributed, wrap_policy_for_training
from robot_learn.training.lr_schedule import make_warmup_cosine_scheduler
from robot_learn.training.metrics_log import MetricsLogger
from robot_learn.training.precision import autocast, autocast_dtype
from robot_learn.training.rng_state import PreservedRNG, capture_rng_state, restore_rng_state, seed_everything

EvaluateFn = Callable[[Policy, int], dict[str, float]]
FINAL_POLICY_DIRNAME = "policy"
CONFIG_FILENAME = "train_config.yaml"
_STATE_FORMAT = 1


class BatchSampler(Protocol):
    """What the trainer needs from a sampler (``robot_learn.data.WindowSampler`` fits)."""

    def sample(self) -> dict[str, Any]: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class Trainer:
    """Trains a :class:`~robot_learn.policies.Policy` on batches from a window sampler.

    Args:
        policy: the policy to train (its parameters are updated in place).
        sampler: yields numpy batches via ``sample()`` and saves/restores its RNG
            with ``state_dict()``/``load_state_dict()``. Under DDP each rank must
            draw different windows: build each rank's sampler with its own seed
            (see :func:`robot_learn.training.rank_seed`).
        cfg: the :class:`TrainConfig`.
        evaluate_fn: optional ``evaluate_fn(ema_policy, step) -> dict`` called every
            ``cfg.eval_every`` steps and at the end; its metrics are logged with an
            ``eval/`` prefix. It runs with all RNGs preserved, so it cannot perturb
            training.

    After :meth:`fit`, ``trainer.ema_policy`` holds the EMA weights (the policy to
    evaluate and deploy), also saved to ``out_dir/policy/``.
    """

    def __init__(
        self,
        policy: Policy,
        sampler: BatchSampler,
        cfg: TrainConfig,
        evaluate_fn: EvaluateFn | None = None,
    ) -> None:
        if not isinstance(cfg, TrainConfig):
            raise TypeError(f"cfg must be a TrainConfig, got {type(cfg).__name__}")
        sampler_batch = getattr(sampler, "batch_size", None)
        if sampler_batch is not None and int(sampler_batch) != cfg.batch_size:
            raise ValueError(
                f"sampler batch_size {sampler_batch} differs from TrainConfig.batch_size {cfg.batch_size}; "
                "build the sampler with the config's batch size"
            )
        self.cfg = cfg
        self.sampler = PrefetchingSampler(sampler, cfg.prefetch) if cfg.prefetch > 0 else sampler
        self.evaluate_fn = evaluate_fn
        self.out_dir = Path(cfg.out_dir)
        if cfg.num_threads > 0:
            torch.set_num_threads(cfg.num_threads)
        self.dist: DistContext = init_distributed(cfg.device, cfg.ddp_backend)
        self.device = self.dist.device
        self.policy = policy.to(self.device)
        self.policy.train()
        self.autocast_dtype = autocast_dtype(cfg.amp, cfg.cpu_amp, self.device)

        # The EMA copy never receives gradients; it is what gets evaluated and saved.
        # Copied before the DDP wrap (so it carries no DDP hooks), synced after it.
        self.ema_policy = copy.deepcopy(self.policy).eval().requires_grad_(False)
        # Wrapping broadcasts rank 0's weights, so every rank starts identical.
        self.model = wrap_policy_for_training(self.policy, self.dist, cfg.ddp_find_unused_parameters)
        self.ema: EMAModel | None = None
        if cfg.ema.enabled:
            self.ema = EMAModel(
                self.policy.parameters(),
                decay=cfg.ema.decay,
                min_decay=cfg.ema.min_decay,
                update_after_step=cfg.ema.update_after_step,
                use_ema_warmup=cfg.ema.use_warmup,
                inv_gamma=cfg.ema.inv_gamma,
                power=cfg.ema.power,
            )
        self._sync_ema_policy()

        impl = {"fused": {"fused": True}, "foreach": {"foreach": True}, "for_loop": {"foreach": False}}
        self.optimizer = torch.optim.AdamW(
            self.policy.parameters(), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay,
            **impl[cfg.optimizer_impl],
        )
        self.lr_scheduler = make_warmup_cosine_scheduler(self.optimizer, cfg.warmup_steps, cfg.steps)
        self.step = 0
        self._elapsed_before = 0.0  # training seconds spent by earlier (killed) runs
        self._last_eval: dict[str, float] = {}

    # ------------------------------------------------------------------ public API
    def fit(self) -> dict[str, Any]:
        """Train to ``cfg.steps`` (resuming from the latest checkpoint) and return final metrics.

        Returns a dict with ``step``, ``loss`` (mean over the last log interval),
        ``lr``, ``samples_per_s`` (all ranks, this process's run), ``time``,
        ``final_policy_dir`` and the last ``eval/*`` metrics.
        """
        cfg = self.cfg
        try:
            check_sampler_data(self.sampler)
            resumed = self._maybe_resume()
            if not resumed:
                check_rank_samplers_differ(self.sampler, self.dist)
                # Different ranks get different noise/dropout streams; weights are
                # synchronised by DDP's broadcast from rank 0 at wrap time.
                seed_everything(cfg.seed + self.dist.rank)
            logger = None
            if self.dist.is_main:
                self.out_dir.mkdir(parents=True, exist_ok=True)
                with open(self.out_dir / CONFIG_FILENAME, "w") as f:
                    yaml.safe_dump(cfg.to_dict(), f, sort_keys=False)
                logger = MetricsLogger(
                    self.out_dir, self.step, cfg.wandb, cfg.wandb_project, run_config=cfg.to_dict()
                )
            try:
                return self._loop(logger)
            finally:
                if logger is not None:
                    logger.close()
        finally:
            if isinstance(self.sampler, PrefetchingSampler):
                self.sampler.close()
            self.dist.close()

    # ------------------------------------------------------------------ the loop
    def _loop(self, logger: MetricsLogger | None) -> dict[str, Any]:
        cfg = self.cfg
        start_step = self.step
        t_start = time.perf_counter()
        window_loss = torch.zeros((), device=self.device)
        window_extra: dict[str, torch.Tensor] = {}
        window_n = 0
        window_data_s = 0.0  # time in sampler.sample + to_torch, to spot a data-bound run
        window_pause_s = 0.0  # eval/checkpoint time, kept out of the throughput numbers
        window_t0 = time.perf_counter()
        last_logged: dict[str, float] = {}
        bar = tqdm(
            total=cfg.steps, initial=self.step, disable=not (self.dist.is_main and cfg.progress_bar),
            desc="train", dynamic_ncols=True,
        )
        while self.step < cfg.steps:
            out, data_s = self._train_step()
            window_data_s += data_s
            window_loss += out["loss"].detach().float()
            for key, value in out.items():
                if key != "loss" and isinstance(value, torch.Tensor) and value.numel() == 1:
                    window_extra[key] = window_extra.get(key, 0.0) + value.detach().float()
            window_n += 1
            self.step += 1
            bar.update(1)

            is_last = self.step == cfg.steps
            if (cfg.log_every and self.step % cfg.log_every == 0) or is_last:
                # One all-reduce per log interval keeps steps free of host syncs.
                mean_loss = float(self.dist.all_reduce_mean(window_loss / window_n))
                if not math.isfinite(mean_loss):
                    raise FloatingPointError(
                        f"training loss became {mean_loss} by step {self.step}; lower lr or check the data"
                    )
                dt = time.perf_counter() - window_t0 - window_pause_s
                last_logged = {
                    "loss": mean_loss,
                    "lr": self.lr_scheduler.get_last_lr()[0],
                    "time": self._elapsed_before + time.perf_counter() - t_start,
                    "samples_per_s": window_n * cfg.batch_size * self.dist.world_size / max(dt, 1e-9),
                    "step_time": dt / window_n,
                    "data_time": window_data_s / window_n,
                }
                for key, total in window_extra.items():
                    last_logged[key] = float(self.dist.all_reduce_mean(total / window_n))
                if logger is not None:
                    logger.log(self.step, last_logged)
                bar.set_postfix(loss=f"{mean_loss:.4f}", lr=f"{last_logged['lr']:.2e}")
                window_loss.zero_()
                window_extra, window_n, window_data_s, window_pause_s = {}, 0, 0.0, 0.0
                window_t0 = time.perf_counter()

            # Evaluate before checkpointing so a checkpoint at this step follows the eval.
            pause_t0 = time.perf_counter()
            if self.evaluate_fn is not None and ((cfg.eval_every and self.step % cfg.eval_every == 0) or is_last):
                self._evaluate(logger)
            if (cfg.ckpt_every and self.step % cfg.ckpt_every == 0) or is_last:
                self.save_checkpoint(t_start)
            window_pause_s += time.perf_counter() - pause_t0
        bar.close()

        run_time = time.perf_counter() - t_start
        self._sync_ema_policy()
        final_dir = self.out_dir / FINAL_POLICY_DIRNAME
        if self.dist.is_main:
            self.ema_policy.save(final_dir)
        self.dist.barrier()
        steps_run = self.step - start_step
        return {
            "step": self.step,
            "loss": last_logged.get("loss", float("nan")),
            "lr": self.lr_scheduler.get_last_lr()[0],
            "samples_per_s": steps_run * cfg.batch_size * self.dist.world_size / max(run_time, 1e-9),
            "time": self._elapsed_before + run_time,
            "world_size": self.dist.world_size,
            "final_policy_dir": str(final_dir),
            **self._last_eval,
        }

    def _train_step(self) -> tuple[dict[str, torch.Tensor], float]:
        """One optimisation step; returns the loss dict and the seconds spent getting the batch."""
        t0 = time.perf_counter()
        batch = to_torch(self.sampler.sample(), self.device)
        data_s = time.perf_counter() - t0
        with self._autocast():
            out = self.model(batch)
        loss = out["loss"]
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.cfg.grad_clip)
        self.optimizer.step()
        self.lr_scheduler.step()
        if self.ema is not None:
            self.ema.step(self.policy.parameters())
        return out, data_s

    def _autocast(self) -> contextlib.AbstractContextManager:
        return autocast(self.device, self.autocast_dtype)

    def _evaluate(self, logger: MetricsLogger | None) -> None:
        self._sync_ema_policy()
        metrics: dict[str, float] = {}
        if self.dist.is_main:
            with PreservedRNG():
                raw = self.evaluate_fn(self.ema_policy, self.step)  # type: ignore[misc]
            # Only scalars are logged; lists, paths etc. in the eval result are skipped.
            metrics = {
                (k if k.startswith("eval/") else f"eval/{k}"): float(v)
                for k, v in (raw or {}).items()
                if isinstance(v, (int, float, np.number))
            }
            if logger is not None and metrics:
                logger.log(self.step, metrics)
        self._last_eval = self.dist.gather_objects(metrics)[0]

    def _sync_ema_policy(self) -> None:
        """Make ``ema_policy`` hold the EMA parameters and the live policy's buffers."""
        with torch.no_grad():
            # copy_, not EMAModel.copy_to (it writes through .data): the version counters move, so a
            # compile_inference graph holding frozen weights (CompiledCall) compiles afresh.
            sources = self.ema.shadow_params if self.ema is not None else self.policy.parameters()
            for dst, src in zip(self.ema_policy.parameters(), sources, strict=True):
                dst.copy_(src)
            # Buffers (normalisers) are not averaged: they are fixed data statistics.
            for dst, src in zip(self.ema_policy.buffers(), self.policy.buffers()):
                dst.copy_(src)

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self, t_start: float | None = None) -> Path | None:
        """Write ``out_dir/checkpoints/step_XXXXXXX`` (rank 0) and update ``latest``.

        Every rank contributes its RNG and sampler state, so a DDP run resumes
        exactly too. Returns the checkpoint dir on rank 0, None elsewhere.
        """
        elapsed = self._elapsed_before + (time.perf_counter() - t_start if t_start is not None else 0.0)
        rank_state = {
            "rng": capture_rng_state(),
            "sampler": encode_state(self.sampler.state_dict(), "sampler.state_dict()"),
        }
        rank_states = self.dist.gather_objects(rank_state)
        self._sync_ema_policy()
        path = None
        if self.dist.is_main:
            ema_state = None
            if self.ema is not None:
                # Shadow weights live in ema/ (safetensors); keep only the counters here.
                ema_state = {k: v for k, v in self.ema.state_dict().items() if k != "shadow_params"}
            state = {
                "format_version": _STATE_FORMAT,
                "step": self.step,
                "elapsed_s": elapsed,
                "world_size": self.dist.world_size,
                "optimizer": self.optimizer.state_dict(),
                "lr_scheduler": self.lr_scheduler.state_dict(),
                "ema": ema_state,
                "ranks": rank_states,
                "config": self.cfg.to_dict(),
            }

            def write_contents(tmp: Path) -> None:
                tmp.mkdir(parents=True)
                self.policy.save(tmp / POLICY_DIRNAME)
                self.ema_policy.save(tmp / EMA_DIRNAME)
                with open(tmp / STATE_FILENAME, "wb") as f:
                    torch.save(state, f)
                    f.flush()
                    os.fsync(f.fileno())

            path = write_checkpoint(self.out_dir, self.step, write_contents, self.cfg.keep_last_k)
        self.dist.barrier()
        return path

    def _maybe_resume(self) -> bool:
        """Load the latest checkpoint in ``out_dir`` if ``cfg.resume``; True when resumed."""
        if not self.cfg.resume:
            return False
        if self.dist.is_main:
            remove_partial_checkpoints(self.out_dir / CHECKPOINT_DIRNAME)
        self.dist.barrier()
        if check_resume_steps(self.out_dir, self.cfg.steps) is None:
            return False
        ckpt = find_latest_checkpoint(self.out_dir)
        self.load_checkpoint(ckpt)
        if self.dist.is_main:
            print(f"resumed from step {self.step} (run_dir {self.out_dir}, checkpoint {ckpt.name})", flush=True)
        return True

    def load_checkpoint(self, ckpt_dir: str | os.PathLike) -> None:
        """Restore weights, EMA, optimiser, scheduler, step, RNGs and sampler from ``ckpt_dir``."""
        ckpt_dir = Path(ckpt_dir)
        state = load_trainer_state(ckpt_dir)
        self._load_weights(self.policy, ckpt_dir / POLICY_DIRNAME)
        self._load_weights(self.ema_policy, ckpt_dir / EMA_DIRNAME)
        try:
            self.optimizer.load_state_dict(state["optimizer"])
            self.lr_scheduler.load_state_dict(state["lr_scheduler"])
        except (KeyError, ValueError) as exc:
            raise CheckpointError(
                f"checkpoint file {ckpt_dir / STATE_FILENAME} does not match this policy/optimiser: {exc}"
            ) from exc
        if self.ema is not None:
            if state.get("ema") is not None:
                self.ema.load_state_dict(state["ema"])
            with torch.no_grad():
                for shadow, param in zip(self.ema.shadow_params, self.ema_policy.parameters(), strict=True):
                    shadow.copy_(param)
        self._note_precision_switch(ckpt_dir, state.get("config") or {})
        self.step = int(state["step"])
        self._elapsed_before = float(state.get("elapsed_s", 0.0))
        ranks = state["ranks"]
        if len(ranks) == self.dist.world_size:
            mine = ranks[self.dist.rank]
            self.sampler.load_state_dict(decode_state(mine["sampler"]))
            # Last: building/loading modules above may have drawn random numbers.
            restore_rng_state(mine["rng"])
        else:
            # A different world size cannot continue the exact streams; start fresh
            # but distinct ones so ranks still differ and do not repeat step 0.
            seed_everything(self.cfg.seed + self.dist.rank + 1_000_003 * self.step)

    def _note_precision_switch(self, ckpt_dir: Path, saved: Mapping[str, Any]) -> None:
        """One line when the checkpoint's steps ran at another precision than this run's:
        resuming is allowed (weights and optimiser state are fp32 either way), not silent."""
        if "amp" not in saved and "cpu_amp" not in saved:
            return
        with warnings.catch_warnings():  # the saved flags are only read, not run under
            warnings.simplefilter("ignore")
            before = autocast_dtype(bool(saved.get("amp", True)), bool(saved.get("cpu_amp", False)), self.device)
        if before != self.autocast_dtype and self.dist.is_main:
            def name(dtype: torch.dtype | None) -> str:
                return "fp32" if dtype is None else f"{str(dtype).removeprefix('torch.')} autocast"

            print(f"note: checkpoint {ckpt_dir.name} was trained in {name(before)}; the steps from here run in "
                  f"{name(self.autocast_dtype)} (train.amp={self.cfg.amp}, train.cpu_amp={self.cfg.cpu_amp})",
                  flush=True)

    def _load_weights(self, module: nn.Module, policy_dir: Path) -> None:
        if not policy_dir.is_dir():
            raise CheckpointError(f"checkpoint directory missing: {policy_dir}")
        try:
            loaded = load_policy(policy_dir)
        except Exception as exc:
            raise CheckpointError(f"checkpoint weights in {policy_dir} are corrupt or unreadable "
                                  f"({type(exc).__name__}: {exc})") from exc
        # Settings that change what is trained but not the weights' shapes (policy.head,
        # prediction_type, the frame encoder...) would load silently: compare them first.
        changed = config_differences(loaded.config, module.config,
                                     ignore=getattr(type(module.config), "inference_fields", frozenset()))
        if changed:
            raise CheckpointError(
                f"the checkpoint in {policy_dir} was saved with other policy settings ({'; '.join(changed)}); "
                "resuming needs the same settings, or start a fresh run in another directory")
        try:
            module.load_state_dict(loaded.state_dict())
        except Exception as exc:
            raise CheckpointError(
                f"checkpoint weights in {policy_dir} are corrupt or do not fit this policy "
                f"({type(exc).__name__}: {exc})"
            ) from exc


def rank_seed(seed: int) -> int:
    """``seed`` offset by this process's torchrun rank (``RANK``; 0 outside torchrun).

    Use it for each rank's sampler so ranks draw different windows.
    """
    return seed + int(os.environ.get("RANK", "0"))
