"""``robot-learn eval guide=pcg``: its settings and guide directory are checked before anything runs."""

import numpy as np
import pytest

from robot_learn.policies import diffusion_state_config, make_policy
from robot_learn.policies.latent_dynamics import LatentDynamics, LatentDynamicsConfig
from robot_learn.policies.phase_prototypes import PhaseSettings, build_phase_prototypes


def _saved_policy(path):
    config = diffusion_state_config(down_dims=[16, 32], action_horizon=8, execute_horizon=4, num_inference_steps=2)
    make_policy("diffusion", config).save(path)
    return path


def _guide(path, task):
    """An (untrained) guide over state + env_state built for ``task``."""
    config = LatentDynamicsConfig(task=task, encoder="state", feature_keys=["state", "env_state"], feature_dim=24,
                                  action_dim=5, horizon=4, hidden_dims=[8])
    LatentDynamics(config).save(path / "dynamics")
    demos = [np.random.default_rng(i).standard_normal((12, 24)) for i in range(2)]
    build_phase_prototypes(demos, PhaseSettings(phases=2, clusters_per_phase=2, components=4, delta_steps=4),
                           task, "state").save(path / "prototypes")
    return path


@pytest.mark.parametrize("args, message", [
    (["guide=pgc"], "unknown guide 'pgc'; valid choices: none, pcg"),
    (["guide=pcg"], "guide=pcg needs guide_dir=<a guide directory with dynamics/ and prototypes/>"),
    (["guide=pcg", "guide_dir=nowhere"], "guide directory 'nowhere' lacks dynamics/ or prototypes/"),
    (["guide=pcg", "guide_dir=guide"], "trained on task 'unstack' with encoder 'state'; this run needs task 'stack' "
                                       "with encoder 'state'"),
])
def test_bad_guide_settings_are_one_line_errors(user_error, tmp_path, args, message):
    _saved_policy(tmp_path / "ckpt")
    (tmp_path / "guide").mkdir()
    _guide(tmp_path / "guide", "unstack")
    assert message in user_error("eval", "checkpoint=ckpt", "task=stack", *args)
    assert not (tmp_path / "outputs").exists() or not any((tmp_path / "outputs").rglob("report.json"))
