"""ReGuide's pieces over tensors: the latent dynamics checkpoint, phase prototypes from demos,
and phase-conditioned guidance (PCG) on the sampler's hook."""

import numpy as np
import pytest
import torch
from steering_fixtures import TO, observations, pose_policy, seeded

from robot_learn.policies.diffusion.phase_guidance import PCGSettings, PhaseGuidedSampler
from robot_learn.policies.latent_dynamics import LatentDynamics, LatentDynamicsConfig
from robot_learn.policies.phase_prototypes import PhasePrototypes, PhaseSettings, build_phase_prototypes

pytestmark = pytest.mark.usefixtures("one_torch_thread")
K = 4  # dynamics horizon


def goto_dynamics(action_dim=5, task="reach", encoder="state"):
    """A linear dynamics model (no hidden layer) whose weights say: k steps on, the state is the
    position the last of the k actions commands (the pose layout's x, y, z)."""
    config = LatentDynamicsConfig(task=task, encoder=encoder, feature_keys=["state"], feature_dim=3,
                                  action_dim=action_dim, horizon=K, hidden_dims=[])
    model = LatentDynamics(config)
    head = model.net[-1]
    with torch.no_grad():
        head.weight.zero_()
        head.weight[:, :3] = -torch.eye(3)
        last = 3 + (K - 1) * action_dim
        head.weight[:, last:last + 3] = torch.eye(3)
    return model.eval()


def point_prototypes(points, lower, upper, task="reach", encoder="state"):
    """One prototype per phase at ``points`` (state space = PCA space), thresholds as given."""
    points = torch.tensor(points, dtype=torch.float32)
    phases = len(points)
    components = torch.cat([torch.eye(3), torch.zeros(3, 3)])  # read the features, not their change
    tensors = {"mean": torch.zeros(6), "std": torch.ones(6), "components": components,
               "prototypes": points[:, None, :], "mask": torch.ones(phases, 1, dtype=torch.bool),
               "lower": torch.full((phases,), float(lower)), "upper": torch.full((phases,), float(upper))}
    return PhasePrototypes(PhaseSettings(phases=phases, temperature=0.01), task, encoder, tensors)


def pcg(prototypes, scale=2.0, **settings):
    return PhaseGuidedSampler(pose_policy(num_inference_steps=5), goto_dynamics(), prototypes,
                              PCGSettings(scale=scale, max_timestep=None, **settings))


def guided_and_plain(sampler):
    obs = observations()
    plain = sampler.policy.predict_action_chunk(obs, generator=seeded(4))
    guided = sampler(obs, generator=seeded(4))
    return guided, plain


def distance_to(chunk, point):
    """Where the goto dynamics says the chunk leads, as distance to ``point``."""
    return (chunk[:, TO - 1 + K - 1, :3] - torch.tensor(point)).norm(dim=-1)


TARGET = (0.25, 0.1, 0.05)


def test_pcg_inside_the_band_pulls_the_predicted_future_toward_the_phase():
    guided, plain = guided_and_plain(pcg(point_prototypes([TARGET], lower=0.0, upper=10.0)))
    assert float(distance_to(guided, TARGET).mean()) < 0.7 * float(distance_to(plain, TARGET).mean())


def test_the_guided_chunk_counts_go_on_across_episodes():
    """``reset`` at an episode start forgets the phase, not the counts an evaluation reports."""
    sampler = pcg(point_prototypes([TARGET], lower=0.0, upper=10.0))
    obs = observations()
    sampler(obs, generator=seeded(4))
    sampler.reset()
    sampler(obs, generator=seeded(4))
    batch = next(iter(obs.values())).shape[0]
    assert sampler.chunks == sampler.guided_chunks == 2 * batch and sampler.phase is not None


@pytest.mark.parametrize("band", [(0.0, 1e-3), (5.0, 10.0)], ids=["too_far_to_recover", "already_on_track"])
def test_pcg_outside_the_band_leaves_the_chunk_bit_identical(band):
    sampler = pcg(point_prototypes([TARGET], *band))
    guided, plain = guided_and_plain(sampler)
    assert torch.equal(guided, plain)
    assert sampler.guided_chunks == 0 and sampler.chunks == len(plain)


def two_phases(current, following, lower=0.0, upper=10.0):
    """Phase 0 at ``current`` (one prototype), phase 1 at ``following`` (a list of prototypes)."""
    protos = point_prototypes([current] * len(following) + list(following), lower, upper)
    m = len(following)
    protos.prototypes = torch.stack([protos.prototypes[:m, 0], protos.prototypes[m:, 0]])
    protos.mask = torch.tensor([[True] + [False] * (m - 1), [True] * m])
    return protos


def test_pcg_stops_guiding_when_the_next_phase_is_near():
    plain = pose_policy(num_inference_steps=5).predict_action_chunk(observations(), generator=seeded(4))
    ahead = plain[:, TO - 1 + K - 1, :3].mean(0).tolist()
    # Phase 1 has two prototypes where phase 0 has one, so its soft-min distance is tau log 2 less:
    # whatever the chunk, the next phase is nearer than the current one and nothing is guided...
    near = pcg(two_phases(TARGET, [TARGET, TARGET]), margin=0.0)
    guided, plain = guided_and_plain(near)
    assert torch.equal(guided, plain) and near.guided_chunks == 0
    # ...while the same phase 0 with a far next phase is guided.
    far = pcg(two_phases(TARGET, [(5.0, 5.0, 5.0), (5.0, 5.0, 5.1)]), margin=0.0)
    guided, plain = guided_and_plain(far)
    assert not (guided == plain).flatten(1).all(1).any() and far.guided_chunks == len(plain)


def test_the_phase_advances_after_persistence_consecutive_chunks_near_the_next_phase():
    start, goal = (0.0, 0.0, 0.0), (0.3, 0.0, 0.0)
    sampler = pcg(point_prototypes([start, goal], lower=0.0, upper=1.0), margin=0.1, persistence=2)

    def at(point):
        return {"state": torch.tensor(point).expand(1, TO, 3).clone()}

    phases = []
    for point in (start, goal, start, goal, goal, goal):
        sampler(at(point), generator=seeded(0))
        phases.append(int(sampler.phase[0]))
    assert phases == [0, 0, 0, 0, 1, 1]  # one step near the goal is not enough; two in a row are


def test_phase_prototypes_follow_demo_time_and_their_thresholds_are_ordered():
    rng = np.random.default_rng(0)
    demos = []
    for length in (30, 36, 42, 48, 40):
        t = np.linspace(0.0, 1.0, length)[:, None]
        demos.append(np.concatenate([t, t ** 2, np.sin(3 * t)], axis=1) + 0.01 * rng.standard_normal((length, 3)))
    protos = build_phase_prototypes(demos, PhaseSettings(phases=3, clusters_per_phase=4, components=4,
                                                         prototypes_per_phase=8, delta_steps=4), "reach", "state")
    assert (protos.lower < protos.upper).all()
    early, late = torch.tensor(demos[0][:3], dtype=torch.float32), torch.tensor(demos[0][-3:], dtype=torch.float32)
    d_early = [protos.distance(protos.embed(early, early[:1].expand(3, 3)), torch.full((3,), p)).mean()
               for p in range(3)]
    d_late = [protos.distance(protos.embed(late, late[:1].expand(3, 3)), torch.full((3,), p)).mean()
              for p in range(3)]
    assert d_early[0] < d_early[2] and d_late[2] < d_late[0]


def test_a_feature_constant_in_the_demos_does_not_move_the_distances():
    """A column that never varies in the demos (an upright cube's orientation) is left out:
    a rollout value far from it (the cube tipped over) changes no distance. Before, its std
    was floored at 1e-3 and a 0.9 offset put every rollout chunk hundreds of units from every
    prototype, far outside the guidance band (PCG then guided nothing on stack)."""
    rng = np.random.default_rng(0)
    demos = []
    for length in (30, 36, 42, 48, 40):
        t = np.linspace(0.0, 1.0, length)[:, None]
        moving = np.concatenate([t, np.sin(3 * t)], axis=1) + 0.01 * rng.standard_normal((length, 2))
        demos.append(np.concatenate([moving, np.full((length, 1), 1.0) + 1e-5 * rng.standard_normal((length, 1))],
                                    axis=1))
    protos = build_phase_prototypes(demos, PhaseSettings(phases=3, clusters_per_phase=4, components=4,
                                                         prototypes_per_phase=8, delta_steps=4), "stack", "state")
    frames = torch.tensor(demos[0][10:13], dtype=torch.float32)
    tipped = frames.clone()
    tipped[:, 2] -= 0.9
    phase = torch.zeros(3, dtype=torch.long)
    torch.testing.assert_close(protos.distance(protos.embed(tipped, tipped), phase),
                               protos.distance(protos.embed(frames, frames), phase))
    assert (protos.distance(protos.embed(frames, frames), phase) < 10 * protos.upper[0]).all()
    with pytest.raises(ValueError, match="no feature varies by min_std 0.005"):
        build_phase_prototypes([d * 0 for d in demos], PhaseSettings(phases=3), "stack", "state")


def test_thresholds_from_held_out_demos_admit_an_unseen_demo():
    """With as many prototypes as frames, in-sample distances are near 0 and the band would
    call much of an unseen expert demo 'too far to recover' (here half its frames); held-out
    thresholds (a demo measured against prototypes built without it) admit all of it."""
    def demo(length, rng):
        shift = rng.uniform(-0.2, 0.2)
        t = np.linspace(0.0, 1.0, length)[:, None]
        return np.concatenate([t + shift, np.sin(3 * t) - shift, t ** 2], axis=1) + 0.01 * rng.standard_normal(
            (length, 3))

    rng = np.random.default_rng(0)
    demos = [demo(length, rng) for length in (30, 36, 42, 48, 40, 34, 38, 44)]
    unseen = torch.tensor(demo(40, rng), dtype=torch.float32)
    earlier = unseen[torch.clamp(torch.arange(len(unseen)) - 4, min=0)]
    admitted = {}
    for folds in (0, 5):
        protos = build_phase_prototypes(demos, PhaseSettings(phases=3, clusters_per_phase=4, components=4,
                                                             prototypes_per_phase=64, delta_steps=4,
                                                             threshold_folds=folds), "reach", "state")
        z = protos.embed(unseen, earlier)
        d = torch.stack([protos.distance(z, torch.full((len(unseen),), p)) for p in range(3)]).min(0).values
        admitted[folds] = float((d <= protos.upper.max()).float().mean())
    assert admitted[0] <= 0.6 and admitted[5] >= 0.95, admitted


def test_fewer_demos_than_phases_is_a_one_line_error():
    with pytest.raises(ValueError, match=r"^phase prototypes need at least as many demos as phases: got 2 demos "
                                         r"for phases=3$"):
        build_phase_prototypes([np.zeros((10, 3))] * 2, PhaseSettings(phases=3), "reach", "state")


def test_dynamics_and_prototypes_load_back_and_refuse_another_task_or_encoder(tmp_path):
    model, protos = goto_dynamics(), point_prototypes([TARGET, (0.0, 0.0, 0.1)], 0.1, 0.5)
    model.save(tmp_path / "dynamics")
    protos.save(tmp_path / "prototypes")
    loaded = LatentDynamics.load(tmp_path / "dynamics", task="reach", encoder="state")
    f, a = torch.randn(4, 3), torch.randn(4, K, 5)
    assert torch.equal(loaded(f, a), model(f, a))
    again = PhasePrototypes.load(tmp_path / "prototypes", task="reach", encoder="state")
    assert torch.equal(again.prototypes, protos.prototypes) and torch.equal(again.upper, protos.upper)
    with pytest.raises(ValueError, match=r"trained on task 'reach' with encoder 'state'; this run needs task 'stack' "
                                         r"with encoder 'state'$"):
        LatentDynamics.load(tmp_path / "dynamics", task="stack", encoder="state")
    with pytest.raises(ValueError, match=r"trained on task 'reach' with encoder 'state'; this run needs task 'reach' "
                                         r"with encoder '0123abcd'$"):
        PhasePrototypes.load(tmp_path / "prototypes", task="reach", encoder="0123abcd")


def test_pcg_refuses_a_policy_of_another_action_width_and_mismatched_parts():
    protos = point_prototypes([TARGET], 0.0, 1.0)
    with pytest.raises(ValueError, match=r"reads 4-dim actions but the policy acts in 5 dims"):
        PhaseGuidedSampler(pose_policy(), goto_dynamics(action_dim=4), protos)
    with pytest.raises(ValueError, match=r"the dynamics model \(task 'stack'.*phase prototypes \(task 'reach'"):
        PhaseGuidedSampler(pose_policy(), goto_dynamics(task="stack"), protos)
    with pytest.raises(ValueError, match=r"the guide reads features of frame encoder 'abc' but the policy's frame "
                                         r"encoder is 'none \(a state policy\)'"):
        PhaseGuidedSampler(pose_policy(), goto_dynamics(encoder="abc"), point_prototypes([TARGET], 0, 1, encoder="abc"))
