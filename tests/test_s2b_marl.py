"""S2B's multi-agent meta-referential game (Table 1's learned columns): the two-player vector environment against the
listener-side one, the speaker's action sentences, VDN's loss against a hand-written team TD, SAD's partner input,
the multi-agent trainer's exact resume and its language probe."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from reprobench.core import checkpoint as ckpt
from reprobench.s2b import cores, eoa, marl, r2d2, stimuli, train
from reprobench.s2b.cores import ActionLayout
from reprobench.s2b.marl_env import MetaReferentialGameTwoPlayerVector, regularise
from reprobench.s2b.speaker import posdis_message
from reprobench.s2b.vector_env import MetaReferentialGameVector

PAPER = dict(descriptive=True, nbr_distractors=0, provide_listener_feedback=True, sampling_strategy=None,
             min_nbr_values_per_latent=2, max_nbr_values_per_latent=3, vocab_size=4)


def posdis_speaker(info, cfg) -> np.ndarray:
    """The posdis speaker's message at each sub-environment's observation, in its own token space: round r < R says
    round r's message, round R repeats round R - 1 (the environment's choice), feedback says all EoS."""
    out = np.zeros((len(info["round_idx"]), cfg.max_sentence_length), dtype=np.int64)
    for i, r in enumerate(np.asarray(info["round_idx"]).tolist()):
        if r >= 0:
            msg = posdis_message(info["speaker_latents"][i], max_len=cfg.max_sentence_length,
                                 round_idx=min(r, cfg.n_rounds - 1), n_rounds=cfg.n_rounds)
            out[i] = msg[:cfg.max_sentence_length]
    return out


def equal(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("kwargs", [
    dict(nbr_object_centric_samples=1),
    dict(nbr_object_centric_samples=4, sampling_strategy="component-focused-1shot"),
    dict(descriptive=False, nbr_distractors=2),
    dict(nbr_communication_rounds=3, max_sentence_length=1),
])
def test_listener_side_equals_the_listener_environment_fed_the_posdis_speaker(kwargs):
    env_kwargs = {**PAPER, **kwargs}
    n, seed = 3, 7
    two = MetaReferentialGameTwoPlayerVector(num_envs=n, seed=seed, **env_kwargs)
    one = MetaReferentialGameVector(num_envs=n, seed=seed, **env_kwargs)
    cfg = two.config
    obs2, info2 = two.reset(seed=seed)
    obs1, info1 = one.reset(seed=seed)
    rng = np.random.default_rng(0)
    episodes = np.zeros(n, dtype=int)
    speaker_said = np.zeros((n, cfg.max_sentence_length), dtype=np.int64)
    game_stimulus = {}
    for t in range(600):
        assert equal(obs2["listener"], obs1) and equal(info2, info1), t
        speaker = obs2["speaker"]
        # the speaker sees its own last message (EoS at an episode's start), its role, the listener's mode/outcome
        np.testing.assert_array_equal(speaker["communication_channel"], speaker_said)
        np.testing.assert_array_equal(speaker["role_id"], np.tile([1, 0], (n, 1)))
        for key in ("mode_id", "previous_game_result", "previous_game_reward"):
            np.testing.assert_array_equal(speaker[key], obs1[key])
        # ... and its stimuli, the same through a game, which the listener sees at the game's feedback step
        for i in range(n):
            key = (i, episodes[i], int(info1["game_index"][i]))
            game_stimulus.setdefault(key, speaker["stimulus"][i].copy())
            np.testing.assert_array_equal(speaker["stimulus"][i], game_stimulus[key])
            if info1["round_idx"][i] == -1:
                np.testing.assert_array_equal(speaker["stimulus"][i], obs1["stimulus"][i])
        if t == 300:  # a reseed mid-run
            obs2, info2 = two.reset(seed=seed + 100)
            obs1, info1 = one.reset(seed=seed + 100)
            speaker_said[:] = 0
            episodes += 1
            continue
        messages = posdis_speaker(info2, cfg)
        decisions = rng.integers(cfg.n_decisions, size=n)
        resetting = one.resetting
        obs2, r2, term2, trunc2, info2 = two.step(messages, decisions)
        obs1, r1, term1, trunc1, info1 = one.step(decisions)
        assert equal(r2, r1) and equal(term2, term1) and equal(trunc2, trunc1)
        speaker_said = np.where(resetting[:, None], 0, messages)
        episodes += resetting
    assert episodes.min() >= 2  # whole episodes and autoresets were compared


def test_messages_are_regularised_and_permuted_for_the_listener_only():
    two = MetaReferentialGameTwoPlayerVector(num_envs=2, seed=3, **PAPER)
    obs, info = two.reset(seed=3)
    np.testing.assert_array_equal(obs["listener"]["communication_channel"], 0)  # nothing said yet
    np.testing.assert_array_equal(regularise(np.array([[2, 0, 3], [1, 4, 0]])), [[2, 0, 0], [1, 4, 0]])
    vocab = two.game.current_vocabularies()
    assert sorted(vocab[0, 1:].tolist()) == [1, 2, 3, 4] and (vocab[:, 0] == 0).all()  # a bijection, EoS fixed
    obs, *_ = two.step(np.array([[2, 0, 3], [1, 4, 0]]), np.zeros(2, dtype=np.int64))
    np.testing.assert_array_equal(obs["speaker"]["communication_channel"], [[2, 0, 0], [1, 4, 0]])
    np.testing.assert_array_equal(obs["listener"]["communication_channel"],
                                  [[vocab[0, 2], 0, 0], [vocab[1, 1], vocab[1, 4], 0]])
    with pytest.raises(ValueError, match="speaker_messages"):
        two.step(np.full((2, 3), 5), np.zeros(2, dtype=np.int64))  # token 5 > V = 4
    with pytest.raises(ValueError, match="provide_listener_feedback"):
        MetaReferentialGameTwoPlayerVector(num_envs=1, **{**PAPER, "provide_listener_feedback": False})


def test_action_sentences_are_the_wrappers_little_endian_enumeration():
    # V = 2, L = 2: 1 + 2 + 4 = 7 sentences: EoS; 1; 2; (1, 1) (2, 1) (1, 2) (2, 2), the first token least significant
    layout = ActionLayout("combined", n_decisions=2, vocab_size=2, max_len=2)
    assert layout.n_sentences == 7 and layout.n_actions == 15 and layout.noop == 14
    sentences = [[0, 0], [1, 0], [2, 0], [1, 1], [2, 1], [1, 2], [2, 2]]
    np.testing.assert_array_equal(layout.messages(np.arange(7)), sentences)
    np.testing.assert_array_equal(layout.messages(np.arange(7, 14)), sentences)  # decision 1, same sentences
    np.testing.assert_array_equal(layout.messages(np.array([14])), [[0, 0]])  # the no-op says nothing
    np.testing.assert_array_equal(layout.decisions(np.array([3, 10, 14])), [0, 1, 0])


# --- VDN and SAD ----------------------------------------------------------------------------------------------------
def _team_batch(dims, b, t, p, seed=0):
    g = torch.Generator().manual_seed(seed)
    inputs = {"stimulus": torch.rand(b, t, p, dims.stimulus, generator=g) * 2 - 1,
              "comm": torch.randint(0, dims.vocab_size + 1, (b, t, p, dims.max_len), generator=g),
              "prev_reward": torch.rand(b, t, 1, 1, generator=g).expand(b, t, p, 1),
              "round_id": torch.eye(2)[torch.arange(t) % 2][None, :, None].expand(b, t, p, 2),
              "role_id": torch.eye(2)[:p].expand(b, t, p, 2), "mode_id": torch.tensor([1.0, 0.0]).expand(b, t, p, 2),
              "previous_game_result": torch.zeros(b, t, p, 2), "previous_game_reward": torch.zeros(b, t, p, 1),
              "prev_action": torch.randint(-1, dims.n_actions, (b, t, p), generator=g),
              "partner_action": torch.randint(-1, dims.n_actions, (b, t, p), generator=g),
              "decision": torch.rand(b, t, p, generator=g) < 0.5}
    steps = {**inputs, "action": torch.randint(0, dims.n_actions, (b, t, p), generator=g),
             "reward": torch.rand(b, t, generator=g) * 3 - 2, "done": torch.zeros(b, t, dtype=torch.bool),
             "valid": torch.ones(b, t, dtype=torch.bool)}
    if t > 5:
        steps["done"][0, 4] = True  # a terminal inside the first window (the learner must not bootstrap past it)
        steps["valid"][0, 5:] = False
    return steps


def _vdn(p=2, **kw):
    layout = ActionLayout("combined", 2, 3, 2)
    dims = cores.InputDims(3, 3, 2, 2, layout.n_actions)
    torch.manual_seed(0)
    net = cores.build_network(cores.tiny_net("archi_lstm"), dims, layout, partner_action=True)
    config = r2d2.R2D2Config(**{"burn_in": 2, "n_step": 1, "gamma": 0.9, "unroll": 7, "overlap": 2, **kw})
    learner = r2d2.VDNLearner(net, config, n_actors=2)
    with torch.no_grad():  # a target network different from the online one
        for q in learner.target.parameters():
            q.add_(0.1 * torch.randn(q.shape, generator=torch.Generator().manual_seed(q.numel())))
    return learner, dims


def test_vdn_loss_is_the_one_step_team_td_by_hand():
    learner, dims = _vdn()
    b, t, p, burn = 3, 7, 2, 2
    steps = _team_batch(dims, b, t, p)
    state = {k: v.reshape(b, p, *v.shape[1:]) for k, v in learner.net.initial_state(b * p).items()}
    for v in state.values():  # a non-zero stored state
        v.copy_(torch.rand(v.shape, generator=torch.Generator().manual_seed(1)))
    weights = torch.tensor([1.0, 0.5, 0.25])
    loss, prio, td_abs, mask = learner.loss(steps, state, weights)

    # by hand: each player's sequence stepped one observation at a time from its stored state
    def q_of(net, i, j):
        s = {k: v[i, j][None] for k, v in state.items()}
        out = []
        for k in range(t):
            q, s = net.step({name: steps[name][i, k, j][None] for name in cores.INPUT_KEYS + ("partner_action",)}, s)
            out.append(q[0])
        return torch.stack(out)

    gamma, total, expect_mask = 0.9, 0.0, torch.zeros(b, t - burn, dtype=torch.bool)
    expect_td = torch.zeros(b, t - burn)
    with torch.no_grad():
        for i in range(b):
            online = [q_of(learner.net, i, j) for j in range(p)]
            target = [q_of(learner.target, i, j) for j in range(p)]
            for k in range(burn, t):
                done = bool(steps["done"][i, k])
                if not steps["valid"][i, k] or (k == t - 1 and not done):
                    continue  # padding, or no next observation to bootstrap on
                team_q = sum(online[j][k, steps["action"][i, k, j]] for j in range(p))
                boot = 0.0 if done else sum(target[j][k + 1, online[j][k + 1].argmax()] for j in range(p))
                y = steps["reward"][i, k] + gamma * boot
                expect_td[i, k - burn] = y - team_q
                expect_mask[i, k - burn] = True
                total += 0.5 * weights[i] * (y - team_q) ** 2
    assert torch.equal(mask, expect_mask)
    torch.testing.assert_close(td_abs * mask, expect_td.abs(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(loss, total / (b * (t - burn)), rtol=1e-5, atol=1e-6)
    m = expect_td.abs() * expect_mask
    # the mean over all t - burn positions, masked ones as zeros (Regym's, the default priority_mean)
    torch.testing.assert_close(prio, 0.9 * m.amax(1) + 0.1 * m.sum(1) / (t - burn), rtol=1e-5, atol=1e-6)


def test_vdn_with_one_player_is_r2d2():
    learner, dims = _vdn(n_step=3)
    steps = _team_batch(dims, 3, 7, 1, seed=2)
    state = {k: v[:, None] for k, v in learner.net.initial_state(3).items()}
    plain = r2d2.R2D2Learner(learner.net, learner.config, n_actors=2)
    plain.target = learner.target
    flat = {k: (v[:, :, 0] if v.dim() > 2 else v) for k, v in steps.items()}
    weights = torch.tensor([1.0, 0.3, 0.6])
    for a, b_ in zip(learner.loss(steps, state, weights), plain.loss(flat, {k: v[:, 0] for k, v in state.items()},
                                                                     weights)):
        torch.testing.assert_close(a, b_)


def test_sad_partner_input_is_the_partners_previous_greedy_action():
    learner, dims = _vdn()
    net = learner.net
    steps = _team_batch(dims, 2, 1, 1)
    inputs = {k: v[:, 0, 0] for k, v in steps.items() if k in net.input_keys}
    state = net.initial_state(2)
    q1, _ = net.step(inputs, state)
    q2, _ = net.step({**inputs, "partner_action": (inputs["partner_action"] + 1) % dims.n_actions}, state)
    assert not torch.allclose(q1, q2)  # SAD's input reaches the Q-values
    plain = cores.build_network(cores.tiny_net("archi_lstm"), dims, ActionLayout("combined", 2, 3, 2))
    assert "partner_action" not in plain.input_keys
    assert plain.encoder.out_dim == net.encoder.out_dim - dims.n_actions  # one one-hot of A more with SAD
    # the team's bookkeeping: after a step each player holds its partner's greedy action, -1 after a reset
    config = _marl_config()
    trainer = marl.MARLTrainer(config, marl.MARLConfig.small())
    team = trainer.actors
    np.testing.assert_array_equal(team.partner, -1)
    np.testing.assert_array_equal(team.inputs()["decision"][:, marl.SPEAKER], True)  # the speaker may always speak
    greedy = np.array([[5, 7], [1, 2], [3, 4]])
    obs, info = trainer.env.reset(seed=0)
    team.pending = np.array([False, True, False])
    team.advance(obs, info, greedy, np.zeros(3), np.zeros(3, dtype=bool),
                 {k: v.clone() for k, v in team.state.items()}, greedy)
    np.testing.assert_array_equal(team.partner, [[7, 5], [-1, -1], [4, 3]])
    np.testing.assert_array_equal(team.inputs()["partner_action"], team.partner)


# --- the trainer ------------------------------------------------------------------------------------------------------
def _marl_config(**kw):
    config = train.small(train.preset("table1_s1"))
    env = {**config.env, "nbr_object_centric_samples": 1, "max_nbr_values_per_latent": 3, "vocab_size": 4}
    return dataclasses.replace(config, env=env, n_actors=3, budget=300, eval_every=150, eval_actors=2,
                               eval_episodes=2, r2d2=dataclasses.replace(
                                   config.r2d2, episodes_per_cycle=None, min_handled=0, min_capacity=60, tau=0.02,
                                   batch_size=4, n_minibatches=1, unroll=10, burn_in=2, overlap=2, n_step=2), **kw)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


@pytest.mark.slow
def test_marl_run_learns_probes_and_resumes_exactly(tmp_path, one_thread):
    config = _marl_config()
    m = marl.MARLConfig(probe_episodes=2, eoa=eoa.EoAConfig.tiny(epochs=2))
    straight = marl.MARLTrainer(config, m)
    records = straight.train()
    last = records[-1]
    assert [r["observations"] // 3 for r in records] == [50, 100]
    assert last["updates"] > 0 and last["target_copies"] > 0 and math.isfinite(last["loss"])
    assert last["decisions/test"] > 0 and 0 <= last["zsct_accuracy"] <= 1 and last["probed_episodes"] == 2
    assert 0 <= last["eoa_accuracy"] <= 1 and last["distinct_messages"] >= 1 and last["bosdis"] >= 0

    first = marl.MARLTrainer(config, m)
    first.train(until=200)  # "killed" between evaluations, mid-episode
    path = tmp_path / "run.pt"
    ckpt.save(path, marl.identity(config, m), trainer=first.state_dict())
    resumed = marl.MARLTrainer(config, m)
    resumed.load_state_dict(ckpt.load(path, marl.identity(config, m))["trainer"])
    again = resumed.train()
    assert len(again) == len(records) and all(
        r.keys() == s.keys() and all(_same(r[k], s[k]) for k in r) for r, s in zip(records, again))
    a, b = straight.net.state_dict(), resumed.net.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert all(torch.equal(x, y) for x, y in zip(straight.learner.target.state_dict().values(),
                                                 resumed.learner.target.state_dict().values()))
    with pytest.raises(ValueError, match="MARLTrainer"):
        train.Trainer(config)


def test_language_of_a_constant_and_of_the_posdis_speaker():
    trainer = marl.MARLTrainer(_marl_config(), marl.MARLConfig(probe_episodes=2, eoa=eoa.EoAConfig.tiny(epochs=2)))
    rng = np.random.default_rng(0)
    spaces = [stimuli.sample_space(rng, n_values=[3, 3, 2], n_oc=1) for _ in range(2)]
    constant = [(s, np.tile([1, 2, 0], (len(stimuli.combinations(s.n_values)), 1)), 1) for s in spaces]
    scores = trainer._language(constant)
    # one message for everything: ReferentialGym's modules log 0.0 for every score (no message position varies), and
    # so does the probe since issue 25 (before: topsim and posdis NaN)
    assert all(scores[k] == 0.0 for k in ("topsim", "posdis", "bosdis", "bosdis_listener", "topsim_referentialgym"))
    assert scores["probed_episodes"] == 2 and scores["distinct_messages"] == 1.0
    posdis = [(s, posdis_message(stimuli.combinations(s.n_values), max_len=3), 18) for s in spaces]
    scores = trainer._language(posdis)
    # the posdis speaker asked through the probe scores as Table 1's PS row does (topsim 96.67, posdis 92.03, bosdis
    # 11.57 in the paper: one draw of 256 points of the support split, on which posdis is below its whole-space 1)
    assert scores["topsim"] > 0.9 and 0.8 < scores["posdis"] < 1.0 and scores["bosdis"] < 0.3
    assert scores["distinct_messages"] == 18.0  # 3 x 3 x 2 combinations, one message each


def test_grid_plans_table1_runs_and_checks_their_budget():
    import yaml

    from reprobench.core.errors import ConfigError
    from reprobench.s2b.grid import Grid

    section = yaml.safe_load(open("config.yaml"))["s2b"]
    grid = Grid(section)
    grid.check()
    runs = grid.experiment_curves("table1")
    assert len(runs) == 4 and all("experiment=table1/model=s" in r for r in runs)  # S = 1, 2 x 2 seeds, faithful
    assert set(runs) <= set(grid.zsct_runs())  # aggregated with the other runs that have a query phase
    del section["experiments"]["observations"]["table1"]
    with pytest.raises(ConfigError, match="s2b.experiments.observations"):
        Grid(section).check()
