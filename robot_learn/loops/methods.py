"""The improvement methods by name, and their configs (Hydra ``_target_`` of ``configs/loop/*``)."""

from __future__ import annotations

from typing import Any

from robot_learn.loops.autonomous import Autonomous
from robot_learn.loops.grpo import GRPOLoop
from robot_learn.loops.guided import Guided
from robot_learn.loops.help_curated import HelpCurated
from robot_learn.loops.hgdagger import HGDagger
from robot_learn.loops.more_demos import MoreDemos
from robot_learn.loops.recap import Recap
from robot_learn.loops.reversed import Reversed
from robot_learn.loops.round import LoopConfig, LoopContext, Method
from robot_learn.loops.world_model import WorldModelLoop

METHODS: dict[str, type[Method]] = {m.name: m for m in (HGDagger, HelpCurated, Recap, Autonomous, MoreDemos, Reversed,
                                                     Guided, WorldModelLoop, GRPOLoop)}


def method_class(name: str) -> type[Method]:
    """The method registered as ``name``; ValueError listing the valid methods otherwise."""
    if name not in METHODS:
        raise ValueError(f"unknown loop method '{name}'; valid methods: {', '.join(METHODS)}")
    return METHODS[name]


def make_loop_config(method: str, **settings: Any) -> LoopConfig:
    """The config of ``method`` from its settings (``configs/loop/<method>.yaml``)."""
    return method_class(method).config_class(method=method, **settings)


def make_method(ctx: LoopContext, cfg: LoopConfig) -> Method:
    """The method that runs rounds with ``cfg``."""
    return method_class(cfg.method)(ctx, cfg)
