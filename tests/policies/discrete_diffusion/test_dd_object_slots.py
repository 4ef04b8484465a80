"""Object-slot tokens (``state_tokens``): the instruction picks one of several look-alike
objects whose slot order carries no role, so only grounding the colour word works."""

import numpy as np
import pytest
import torch
from dd_fixtures import train, tiny_config

from robot_learn.policies import make_policy

COLOURS = ("red", "blue", "green")
SLOT = 1 + len(COLOURS)  # x position + colour one-hot


def _scenes(n: int, seed: int) -> dict:
    """Three objects at random x, colours in random slot order; the chunk goes to the named one."""
    rng = np.random.default_rng(seed)
    objects = np.zeros((n, 3, SLOT), np.float32)
    named = rng.integers(0, 3, n)
    instructions, goals = [], np.zeros(n, np.float32)
    for i in range(n):
        objects[i, :, 0] = rng.uniform(-1, 1, 3)
        for slot, colour in enumerate(rng.permutation(3)):
            objects[i, slot, 1 + colour] = 1.0
        slot = int(np.argmax(objects[i, :, 1 + named[i]]))
        goals[i] = objects[i, slot, 0]
        instructions.append(f"go to the {COLOURS[named[i]]} one")
    actions = np.repeat(goals[:, None, None], 4, axis=1)  # [n, H=4, 1]
    return {"objects": objects.reshape(n, 1, -1), "action": actions, "instruction": instructions,
            "others": objects[:, :, 0]}


def _stats(scenes: dict) -> dict:
    out = {}
    for key in ("objects", "action"):
        flat = scenes[key].reshape(-1, scenes[key].shape[-1])
        out[key] = {"min": flat.min(0), "max": flat.max(0), "q01": np.quantile(flat, 0.01, 0).astype(np.float32),
                    "q99": np.quantile(flat, 0.99, 0).astype(np.float32), "mean": flat.mean(0), "std": flat.std(0)}
    return out


def _policy(scenes: dict, **changes):
    config = tiny_config(action_dim=1, state_dims={"objects": 3 * SLOT}, state_tokens={"objects": 3},
                         hidden_dim=48, num_heads=4, num_layers=2, num_bins=32, decoding_rounds=4, **changes)
    torch.manual_seed(0)
    return make_policy("discrete_diffusion", config, _stats(scenes), instructions=scenes["instruction"])


def test_each_object_slot_is_its_own_token():
    scenes = _scenes(2, 0)
    policy = _policy(scenes)
    prefix, pad = policy.observation_tokens({"objects": torch.from_numpy(scenes["objects"]),
                                             "instruction": scenes["instruction"]})
    words = len(scenes["instruction"][0].split())
    assert prefix.shape == (2, words + 3, 48) and not pad.any()


def test_slot_tokens_ground_the_named_colour_and_a_blank_instruction_cannot():
    train_scenes = _scenes(512, 0)
    policy = _policy(train_scenes)
    batch = {"obs": {"objects": torch.from_numpy(train_scenes["objects"])},
             "action": torch.from_numpy(train_scenes["action"]), "instruction": train_scenes["instruction"]}
    losses = train(policy, batch, steps=300, lr=3e-3)
    assert np.mean(losses[-20:]) < 0.5 * np.mean(losses[:20])

    test = _scenes(200, 1)  # held-out scenes
    obs = {"objects": torch.from_numpy(test["objects"])}

    def picked_named(instructions) -> float:
        chunk = policy.predict_action_chunk({**obs, "instruction": instructions})[:, :, 0].mean(1).numpy()
        nearest = np.abs(test["others"] - chunk[:, None]).argmin(1)
        named = np.abs(test["others"] - test["action"][:, :1, 0]).argmin(1)
        return float((nearest == named).mean())

    assert picked_named(test["instruction"]) > 0.8  # goes to the object the words name
    assert picked_named([""] * 200) < 0.6  # chance is 1/3: without words the slot order says nothing


@pytest.mark.parametrize("tokens,message", [({"objects": 5}, "must be >= 1 and divide its size 12"),
                                            ({"images": 2}, "not in state_dims")])
def test_bad_state_tokens_are_named(tokens, message):
    scenes = _scenes(2, 0)
    config = tiny_config(action_dim=1, state_dims={"objects": 3 * SLOT}, state_tokens=tokens)
    with pytest.raises(ValueError, match=message):
        make_policy("discrete_diffusion", config, _stats(scenes), instructions=scenes["instruction"])


def _env_batch(task: str, seeds) -> dict:
    from robot_learn.envs import make_env

    env = make_env(task, cameras=())
    rows = []
    try:
        for seed in seeds:
            obs, _ = env.reset(seed=seed)
            rows.append(obs)
    finally:
        env.close()
    stack = {k: torch.from_numpy(np.stack([r[k] for r in rows]))[:, None] for k in ("state", "env_state", "objects")}
    return {"obs": stack, "instruction": [r["instruction"] for r in rows],
            "action": torch.zeros(len(rows), 8, 5)}


@pytest.mark.parametrize("task", ["bin_place", "stack"])
def test_slot_role_labels_follow_env_state(task):
    from robot_learn.policies.discrete_diffusion.grounding import ROLE_NAMES, slot_roles

    batch = _env_batch(task, range(6))
    roles = slot_roles(batch["obs"]["objects"][:, 0], batch["obs"]["env_state"][:, 0], 3)
    names = [[ROLE_NAMES[int(r)] for r in row] for row in roles]
    expected = {"move", "target", "other"} if task == "bin_place" else {"move", "target", "empty"}
    assert all(set(row) == expected for row in names)
    wrong = batch["obs"]["env_state"][:, 0].clone()
    wrong[0, :3] += 0.05
    with pytest.raises(ValueError, match="'objects' and 'env_state' disagree in batch row 0"):
        slot_roles(batch["obs"]["objects"][:, 0], wrong, 3)


def test_grounding_loss_trains_the_slot_roles_and_needs_env_state():
    from robot_learn.policies.discrete_diffusion import discrete_diffusion_state_config

    batch = _env_batch("bin_place", range(16))
    stats = {k: {"min": v.reshape(-1, v.shape[-1]).min(0).values.numpy(), "max": v.reshape(-1, v.shape[-1]).max(0).values.numpy()}
             for k, v in batch["obs"].items()}
    stats["action"] = {"q01": np.full(5, -1, np.float32), "q99": np.ones(5, np.float32)}
    config = discrete_diffusion_state_config(state_dims={"state": 10, "objects": 45}, state_tokens={"objects": 3},
                                             hidden_dim=32, num_layers=2, num_heads=2, grounding_weight=1.0)
    torch.manual_seed(0)
    policy = make_policy("discrete_diffusion", config, stats, instructions=batch["instruction"])
    optimiser = torch.optim.AdamW(policy.parameters(), lr=3e-3)
    first = None
    for _ in range(60):
        out = policy.compute_loss(batch)
        first = first or float(out["grounding_loss"].detach())
        optimiser.zero_grad()
        out["loss"].backward()
        optimiser.step()
    assert float(out["grounding_loss"]) < 0.5 * first and float(out["grounding_accuracy"]) > 0.9
    no_labels = {**batch, "obs": {k: v for k, v in batch["obs"].items() if k != "env_state"}}
    with pytest.raises(ValueError, match="needs 'env_state' in the training batch"):
        policy.compute_loss(no_labels)
    with pytest.raises(ValueError, match="split into slot tokens"):
        discrete_diffusion_state_config(state_dims={"state": 10, "objects": 45}, grounding_weight=1.0)
