"""Operator objectives (ITPS alignment distances) on hand-made chunks."""

import pytest
import torch

from robot_learn.policies.steering_objectives import (
    CorrectionObjective, PointObjective, SketchObjective, resample_path,
)


def chunk_along(positions, action_dim=5, position_dims=(0, 1, 2)):
    """A one-element chunk whose position dims follow ``positions`` ``[H, 3]`` (other dims 0.5)."""
    positions = torch.as_tensor(positions, dtype=torch.float32)
    chunk = torch.full((1, len(positions), action_dim), 0.5)
    chunk[0, :, list(position_dims)] = positions
    return chunk


def test_point_cost_is_the_mean_distance_of_the_planned_steps():
    positions = [[9.0, 9.0, 9.0], [0.0, 0.0, 0.0], [0.3, 0.0, 0.0], [0.0, 0.4, 0.0]]
    cost = PointObjective([0.0, 0.0, 0.0], action_dim=5, start=1)(chunk_along(positions))
    assert cost.shape == (1,) and cost.item() == pytest.approx((0.0 + 0.3 + 0.4) / 3, abs=1e-5)


def test_objectives_read_the_position_dims_they_are_given():
    chunk = chunk_along([[0.1, 0.2, 0.3]] * 2, action_dim=6, position_dims=(3, 4, 5))
    objective = PointObjective([0.1, 0.2, 0.3], action_dim=6, position_dims=(3, 4, 5))
    assert objective(chunk).item() == pytest.approx(0.0, abs=1e-5)
    assert PointObjective([0.1, 0.2, 0.3], action_dim=6)(chunk).item() > 0.1  # dims 0-2 hold 0.5


def test_a_sketch_is_resampled_evenly_along_its_length():
    path = torch.tensor([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.1, 0.3, 0.0]])  # 0.4 m long, uneven points
    resampled = resample_path(path, 5)
    steps = (resampled[1:] - resampled[:-1]).norm(dim=-1)
    assert torch.allclose(steps, torch.full((4,), 0.1), atol=1e-6)
    assert torch.equal(resampled[0], path[0]) and torch.allclose(resampled[-1], path[-1])
    sketch = SketchObjective(path.tolist(), action_dim=5)
    assert sketch(chunk_along(resampled)).item() == pytest.approx(0.0, abs=1e-4)
    assert sketch(chunk_along(resampled.flip(0))).item() > 0.5  # the same points, the wrong way


def test_a_correction_compares_its_steps_and_guides_with_whole_actions_held_after():
    correction = [[0.2, 0.0, 0.1, 0.5, 1.0], [0.22, 0.0, 0.1, 0.5, 1.0]]
    objective = CorrectionObjective(correction, action_dim=5, start=1)
    chunk = torch.zeros(2, 5, 5)
    guided = objective.guide_chunk(chunk)
    assert torch.equal(guided[:, 0], chunk[:, 0])
    assert torch.allclose(guided[0, 1:3], torch.tensor(correction))
    assert torch.allclose(guided[0, 3:], torch.tensor(correction[-1]).expand(2, 5))
    assert objective(guided).tolist() == pytest.approx([0.0, 0.0], abs=1e-5)
    assert objective(chunk)[0].item() == pytest.approx(((0.2**2 + 0.1**2) ** 0.5) + ((0.22**2 + 0.1**2) ** 0.5), abs=1e-5)


@pytest.mark.parametrize(("build", "message"), [
    (lambda: PointObjective([0.1, 0.2], action_dim=5), r"3 finite numbers \(x, y, z\), got \[0.1, 0.2\]"),
    (lambda: SketchObjective([[0.1, 0.2, 0.3]], action_dim=5), r"at least 2 points of 3 numbers .* got shape \(1, 3\)"),
    (lambda: CorrectionObjective([[0.1, 0.2, 0.3]], action_dim=5), r"1 action of 5 numbers .* got shape \(1, 3\)"),
    (lambda: PointObjective([0, 0, 0], action_dim=2), r"position_dims must be 3 distinct action dims below action_dim 2"),
    (lambda: CorrectionObjective([[0.0] * 5] * 9, action_dim=5, start=1).check_horizon(8),
     r"a correction of 9 steps is longer than the 7 steps a chunk plans from step 1 \(action_horizon 8\)"),
])
def test_malformed_objectives_are_refused_naming_what_was_given(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_a_chunk_of_another_width_is_refused():
    with pytest.raises(ValueError, match=r"point objective reads 5-dim actions, got a chunk of shape \(1, 2, 6\)"):
        PointObjective([0, 0, 0], action_dim=5)(torch.zeros(1, 2, 6))
