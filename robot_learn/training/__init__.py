"""Training: the :class:`Trainer` (single process or torchrun/DDP), checkpoints, EMA and logging.

```python
from robot_learn.training import Trainer, TrainConfig
Trainer(policy, sampler, TrainConfig(steps=1000, out_dir="runs/x")).fit()
```
"""

from robot_learn.training.checkpoint import CheckpointError, find_latest_checkpoint, load_trainer_state
from robot_learn.training.config import EMAConfig, TrainConfig
from robot_learn.training.lr_schedule import make_warmup_cosine_scheduler, warmup_cosine_factor
from robot_learn.training.metrics_log import MetricsLogger
from robot_learn.training.distributed import PolicyLoss
from robot_learn.training.policy_builder import build_policy_for_view
from robot_learn.training.trainer import Trainer, rank_seed

__all__ = [
    "CheckpointError",
    "EMAConfig",
    "MetricsLogger",
    "PolicyLoss",
    "TrainConfig",
    "Trainer",
    "build_policy_for_view",
    "find_latest_checkpoint",
    "load_trainer_state",
    "make_warmup_cosine_scheduler",
    "rank_seed",
    "warmup_cosine_factor",
]
