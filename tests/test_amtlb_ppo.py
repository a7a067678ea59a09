"""AMTLB's PPO (reprobench.amtlb.ppo): GAE and the loss terms against hand computation, the act() calling
convention, the network's size, the learning-rate schedule, exact resume, save/load and clone. Tiny rollouts (2 slots,
4 steps) on random frames: no emulator."""

import io
import math

import numpy as np
import pytest
import torch

from reprobench.amtlb.ppo import PPO, gae, ppo_losses

N, T = 2, 4  # slots, rollout length

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.one_thread


def tiny(seed=0, **kw):
    kw = dict(num_steps=T, num_minibatches=2, update_epochs=2) | kw
    return PPO(N, seed, "cpu", **kw)


def frames(rng, n=N):
    return rng.integers(0, 256, size=(n, 4, 84, 84), dtype=np.uint8)


def drive(agent, rng, calls):
    """`calls` act() calls on random frames, rewards and episode ends; returns the actions."""
    out = []
    for _ in range(calls):
        out.append(agent.act(frames(rng), rng.integers(-2, 3, size=N).astype(np.float64), rng.random(N) < 0.2))
    return np.stack(out)


def weights(agent):
    return {k: v.clone() for k, v in agent.net.state_dict().items()}


def same_weights(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_gae_by_hand():
    # slot 0: gamma = lambda = 0.5, rewards 1 0 2 1, values 0.5 1 0 2, the transition at t=1 ends an episode,
    # bootstrap value 4. Backwards: delta_3 = 1 + .5*4 - 2 = 1, A_3 = 1; delta_2 = 2 + .5*2 - 0 = 3,
    # A_2 = 3 + .25*1 = 3.25; t=1 ends the episode: A_1 = delta_1 = 0 - 1 = -1; delta_0 = 1 + .5*1 - .5 = 1,
    # A_0 = 1 + .25*(-1) = 0.75. Returns = A + V = 1.25 0 3.25 3.
    # slot 1: a single reward 1 at t=3, zero values, no end, bootstrap 0: A = 1/64 1/16 1/4 1.
    rewards = torch.tensor([[1.0, 0.0], [0.0, 0.0], [2.0, 0.0], [1.0, 1.0]])
    values = torch.tensor([[0.5, 0.0], [1.0, 0.0], [0.0, 0.0], [2.0, 0.0]])
    dones = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    adv, ret = gae(rewards, values, dones, torch.tensor([4.0, 0.0]), gamma=0.5, lam=0.5)
    torch.testing.assert_close(adv[:, 0], torch.tensor([0.75, -1.0, 3.25, 1.0]))
    torch.testing.assert_close(ret[:, 0], torch.tensor([1.25, 0.0, 3.25, 3.0]))
    torch.testing.assert_close(adv[:, 1], torch.tensor([1 / 64, 1 / 16, 1 / 4, 1.0]))


def test_gae_last_step_ends_episode():
    # the last transition ends its episode: its bootstrap value 100 must not count; gamma 0.9, lambda 1:
    # A_1 = 1 - 0 = 1, A_0 = 0 + .9*0 - 0 + .9*1 = 0.9
    adv, _ = gae(torch.tensor([[0.0], [1.0]]), torch.zeros(2, 1), torch.tensor([[0.0], [1.0]]),
                 torch.tensor([100.0]), gamma=0.9, lam=1.0)
    torch.testing.assert_close(adv[:, 0], torch.tensor([0.9, 1.0]))


def minibatch():
    # two samples, two actions. Sample 0: logits (0, 0) -> probs (.5, .5), action 0, old prob .4: ratio 1.25,
    # advantage +1. Sample 1: logits (ln 1, ln 3) -> probs (.25, .75), action 1, old prob .9375: ratio .8, advantage -2.
    return dict(logits=torch.tensor([[0.0, 0.0], [0.0, math.log(3.0)]]), actions=torch.tensor([0, 1]),
                old_logprobs=torch.log(torch.tensor([0.4, 0.9375])), advantages=torch.tensor([1.0, -2.0]),
                values=torch.tensor([1.0, 0.0]), old_values=torch.tensor([0.5, 0.5]), returns=torch.tensor([2.0, 0.3]))


def test_losses_by_hand():
    terms = ppo_losses(**minibatch(), clip=0.1, normalize_advantages=False)
    # policy: sample 0 max(-1*1.25, -1*1.1) = -1.1 (clipped at 1 + 0.1); sample 1 max(2*.8, 2*.9) = 1.8 -> mean .35
    assert terms["policy"].item() == pytest.approx(0.35)
    # value, clip 0.1 around the old values: sample 0 unclipped (1-2)^2 = 1, clipped (.6-2)^2 = 1.96 -> 1.96;
    # sample 1 unclipped (0-.3)^2 = .09, clipped (.4-.3)^2 = .01 -> .09; half the mean: .5 * 2.05 / 2 = .5125
    assert terms["value"].item() == pytest.approx(0.5125)
    # entropy: ln 2 and -(.25 ln .25 + .75 ln .75)
    h1 = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert terms["entropy"].item() == pytest.approx((math.log(2) + h1) / 2)
    # approx_kl = mean((r - 1) - ln r), both ratios outside [0.9, 1.1]
    assert terms["approx_kl"].item() == pytest.approx(((0.25 - math.log(1.25)) + (-0.2 - math.log(0.8))) / 2)
    assert terms["clip_fraction"].item() == 1.0


def test_losses_normalised_and_unclipped_value():
    # advantages (1, -2) normalised: mean -.5, sample std sqrt(4.5) -> (+a, -a), a = 1/sqrt 2. Policy:
    # max(-1.25a, -1.1a) = -1.1a; max(.8a, .9a) = .9a -> mean -.1a/2 ... = (-1.1a + .9a) / 2 = -.1/sqrt 2
    terms = ppo_losses(**minibatch(), clip=0.1, normalize_advantages=True, clip_value=False)
    assert terms["policy"].item() == pytest.approx(-0.1 / math.sqrt(2), rel=1e-5)
    assert terms["value"].item() == pytest.approx(0.5 * (1.0 + 0.09) / 2)


def test_parameter_count():
    # conv 4->32 8x8: 4*32*64 + 32 = 8,224; conv 32->64 4x4: 32*64*16 + 64 = 32,832; conv 64->64 3x3: 64*64*9 + 64 =
    # 36,928; 84 -> 20 -> 9 -> 7, so linear 64*7*7 = 3136 -> 512: 3136*512 + 512 = 1,606,144; actor 512*18 + 18 =
    # 9,234; critic 512 + 1 = 513. Sum: 1,693,875.
    agent = tiny()
    assert sum(p.numel() for p in agent.net.parameters()) == 1_693_875
    assert agent.net.actor.weight.shape == (18, 512)


def test_init():
    agent = tiny()
    # orthogonal rows/columns scaled by the gain: W W^T = gain^2 I for the (18, 512) actor head (gain 0.01)
    w = agent.net.actor.weight.detach()
    torch.testing.assert_close(w @ w.T, 1e-4 * torch.eye(18), atol=1e-9, rtol=0)
    c = agent.net.critic.weight.detach()
    assert (c @ c.T).item() == pytest.approx(1.0)
    assert all(not torch.any(m.bias) for m in (agent.net.actor, agent.net.critic, agent.net.trunk[0]))


def test_calling_convention_off_by_one():
    """act(obs_t, r, starts) stores r and starts as the outcome of the step opened by the previous call; the rollout
    is complete at the (T+1)-th call, which updates from obs_T's value before choosing obs_T's action."""
    agent = tiny()
    rng = np.random.default_rng(1)
    obs = [frames(rng) for _ in range(T + 2)]
    # the raw reward handed in at call c (c = 0 is the first call: no action yet, so it must be ignored)
    raw = [np.array([7.0, 7.0]), np.array([5.0, 0.0]), np.array([-3.0, 0.25]), np.array([0.0, -0.5]),
           np.array([2.0, 2.0]), np.array([-1.0, 0.0])]
    starts = [np.array([True, True]), np.array([False, False]), np.array([False, True]), np.array([False, False]),
              np.array([True, False]), np.array([False, False])]
    seen = {}
    update = agent._update

    def spy(next_obs):
        seen.update(obs=agent.obs.clone(), rewards=agent.rewards.clone(), dones=agent.dones.clone(),
                    next_obs=next_obs.clone(), updates=agent.updates)
        update(next_obs)

    agent._update = spy
    actions = [agent.act(obs[c], raw[c], starts[c]) for c in range(T)]
    assert agent.step == T and not seen  # T steps open, the last one still awaits its reward
    actions.append(agent.act(obs[T], raw[T], starts[T]))
    assert seen["updates"] == 0 and agent.updates == 1
    for t in range(T):
        assert np.array_equal(seen["obs"][t].numpy(), obs[t])
        # step t's reward and end arrive at call t + 1, clipped to their sign
        assert seen["rewards"][t].tolist() == np.sign(raw[t + 1]).tolist()
        assert seen["dones"][t].tolist() == starts[t + 1].astype(float).tolist()
    assert np.array_equal(seen["next_obs"].numpy(), obs[T])  # the bootstrap observation
    # the new rollout opens with obs_T and the action chosen for it after the update
    assert agent.step == 1 and np.array_equal(agent.obs[0].numpy(), obs[T])
    assert agent.actions[0].tolist() == actions[T].tolist()
    assert all(a.dtype == np.int64 and a.shape == (N,) and a.min() >= 0 and a.max() < 18 for a in actions)


def test_same_seed_same_run():
    a, b, c = tiny(seed=3), tiny(seed=3), tiny(seed=4)
    assert np.array_equal(drive(a, np.random.default_rng(0), 2 * T + 2), drive(b, np.random.default_rng(0), 2 * T + 2))
    assert same_weights(weights(a), weights(b))
    assert not torch.equal(weights(a)["actor.weight"], weights(c)["actor.weight"])


def test_learning_rate_annealing():
    # total_steps 16 per slot, 4 per rollout: 4 updates. CleanRL's iteration i (1-based) uses
    # lr * (1 - (i - 1) / 4): 2.5e-4, 1.875e-4, 1.25e-4, 0.625e-4
    agent = tiny(total_steps=16, num_minibatches=1, update_epochs=1)
    rng = np.random.default_rng(0)
    assert agent.total_updates == 4 and agent.current_lr() == pytest.approx(2.5e-4)
    drive(agent, rng, 1)
    for k in range(1, 5):
        drive(agent, rng, T)
        assert agent.updates == k
        assert agent.optimizer.param_groups[0]["lr"] == pytest.approx(2.5e-4 * (1 - (k - 1) / 4))
        assert agent.current_lr() == pytest.approx(2.5e-4 * (1 - k / 4))
    fixed = tiny(total_steps=None, num_minibatches=1, update_epochs=1)
    drive(fixed, rng, 2 * T + 1)
    assert fixed.updates == 2 and fixed.optimizer.param_groups[0]["lr"] == 2.5e-4


def test_an_update_changes_weights_and_optimiser():
    agent = tiny()
    before = weights(agent)
    drive(agent, np.random.default_rng(0), T + 1)
    assert not same_weights(before, weights(agent)) and agent.optimizer.state
    assert set(agent.last_losses) >= {"policy", "value", "entropy"}


def roundtrip(state):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def test_exact_resume_mid_rollout():
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    straight = tiny(seed=1)
    drive(straight, rng_a, T + 3)  # one update done (at call T + 1), 3 steps of the next rollout open
    state = roundtrip(straight.state_dict())
    drive(tiny(seed=1), rng_b, T + 3)  # keep rng_b in step with rng_a
    resumed = tiny(seed=99)  # another seed: everything must come from the state
    resumed.load_state_dict(state)
    assert resumed.step == 3 and resumed.updates == 1
    assert np.array_equal(drive(straight, rng_a, T + 2), drive(resumed, rng_b, T + 2))  # crosses two updates
    assert straight.updates == resumed.updates == 3
    assert same_weights(weights(straight), weights(resumed))


def test_resume_refuses_another_configuration():
    with pytest.raises(ValueError, match="num_envs"):
        PPO(3, 0, num_steps=T, num_minibatches=2).load_state_dict(tiny().state_dict())


def test_save_is_byte_stable_and_load_resets(tmp_path):
    agent = tiny(total_steps=16)
    drive(agent, np.random.default_rng(0), T + 2)
    agent.save(tmp_path / "a.pt")
    agent.save(tmp_path / "a_much_longer_name.pt")
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "a_much_longer_name.pt").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pt", "a_much_longer_name.pt"]  # no temp file left
    other = tiny(seed=7, total_steps=16)
    drive(other, np.random.default_rng(1), T + 2)
    other.load(tmp_path / "a.pt")
    assert same_weights(weights(agent), weights(other))
    # "reset to saved weights": a fresh optimiser, an empty rollout, the schedule at its start
    assert not other.optimizer.state and other.step == 0 and other.updates == 0
    assert other.optimizer.param_groups[0]["lr"] == 2.5e-4 and other.current_lr() == 2.5e-4
    other.save(tmp_path / "b.pt")
    assert (tmp_path / "b.pt").read_bytes() == (tmp_path / "a.pt").read_bytes()


def test_clone_is_independent():
    agent = tiny()
    rng = np.random.default_rng(2)
    drive(agent, rng, T + 2)
    twin = agent.clone()
    saved = weights(agent)
    # same state: the same actions for the same inputs (the generator is copied too)
    assert np.array_equal(drive(twin, np.random.default_rng(3), 1), drive(agent, np.random.default_rng(3), 1))
    drive(twin, rng, 2 * T)
    assert twin.updates == 3 and agent.updates == 1
    assert same_weights(saved, weights(agent))  # the twin's updates did not touch the original
    assert not same_weights(saved, weights(twin))


def test_bad_minibatch_count():
    with pytest.raises(ValueError, match="num_minibatches"):
        PPO(3, 0, num_steps=5, num_minibatches=4)


@pytest.mark.slow
def test_learns_a_contextual_bandit():
    """A one-step task PPO must learn in a few updates: the left half of the screen lit asks for action 3, the right
    half for action 11 (raw reward 5, clipped to 1); every step ends an episode. Chance is 1/18; a learner whose
    gradient, advantages or reward bookkeeping had the wrong sign or step would stay near it."""
    n = 8
    agent = PPO(n, 0, "cpu", num_steps=16, num_minibatches=2, learning_rate=1e-3)
    rng = np.random.default_rng(0)
    context, rewards, hits = rng.integers(0, 2, n), np.zeros(n), []
    for _ in range(16 * 15 + 1):
        obs = np.zeros((n, 4, 84, 84), dtype=np.uint8)
        obs[context == 0, :, :, :42] = 255
        obs[context == 1, :, :, 42:] = 255
        actions = agent.act(obs, rewards, np.ones(n, dtype=bool))
        hit = actions == np.where(context == 0, 3, 11)
        rewards, context = 5.0 * hit, rng.integers(0, 2, n)
        hits.append(hit.mean())
    assert agent.updates == 15
    assert np.mean(hits[:16]) < 0.25 and np.mean(hits[-80:]) > 0.7


def test_sampling_draws_what_multinomial_draws():
    agent, g = tiny(), torch.Generator().manual_seed(1)
    agent.sampler.manual_seed(7)
    reference = torch.Generator().manual_seed(7)
    for scale in (0.1, 1.0, 10.0):
        probs = torch.softmax(scale * torch.randn(64, 18, generator=g), -1)
        assert torch.equal(agent._sample(probs), torch.multinomial(probs, 1, generator=reference))
    assert torch.equal(agent.sampler.get_state(), reference.get_state())


def test_no_host_syncs_in_the_update_and_one_per_agent_step():
    """The update reads nothing back; an agent step reads only its actions (the emulators need them on the host)."""
    from reprobench.core.hostsync import HostSyncs

    agent, rng = tiny(), np.random.default_rng(0)
    drive(agent, rng, 2 * T + 1)  # two updates: the optimiser's state exists
    with HostSyncs() as syncs:
        agent._update(torch.as_tensor(frames(rng)))
    assert syncs.count == 0, syncs.points
    with HostSyncs() as syncs:
        drive(agent, rng, 2)  # steps 2 and 3 of a rollout: no update
    assert syncs.count == 2 and all(" act (cpu)" in point for point in syncs.points), syncs.points


def test_the_learning_rate_at_the_10m_frame_point_matches_the_references():
    """CleanRL and the SB3 zoo anneal over 10M agent steps = 40M frames: with 8 emulators at frameskip 4 that is
    40M / 32 = 1,250,000 steps per slot, 1,250,000 // 128 = 9765 updates. After 10M frames (312,500 steps per slot,
    2441 updates) the rate is 1 - 2441/9765 = 0.75003 of its start; annealed over the run's own 10M frames it would
    be 1 - 2441/2441 = 0."""
    from reprobench.amtlb.ppo import PPO
    from reprobench.amtlb.runs import schedule_steps

    reference = PPO(8, 0, "cpu", schedule_steps(40_000_000, 1, 4, 8))
    own = PPO(8, 0, "cpu", schedule_steps(10_000_000, 1, 4, 8))
    assert (reference.total_steps, reference.total_updates, own.total_updates) == (1_250_000, 9765, 2441)
    for agent in (reference, own):
        agent.updates = 312_500 // 128
    assert reference.current_lr() == pytest.approx(2.5e-4 * (1 - 2441 / 9765))
    assert reference.current_lr() / 2.5e-4 == pytest.approx(0.75, abs=1e-4)
    assert own.current_lr() == 0.0
    assert schedule_steps(40_000_000, 47, 4, 8) == 47 * 1_250_000  # pre-training on 47 games: 40M frames each
