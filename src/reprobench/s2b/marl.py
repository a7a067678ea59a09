"""Table 1's learned columns: a speaker and a listener learned together on the two-player meta-referential game
(reprobench.s2b.marl_env), R2D2 with VDN and SAD as the paper says ("an LSTM-based model augmented with both the Value
Decomposition Network and the Simplified Action Decoder"), then the paper's language probe.

    config = train.small(train.preset("table1_s1"))        # or the reference-scale preset
    records = train.run(config, checkpoint="run.pt", marl=MARLConfig.small())
    trainer = MARLTrainer(config, MARLConfig()); trainer.train(until=4000)

Self-play: ONE network plays both roles (role_id tells them apart), as the reference's self-play Regym runs share
one agent. Both act at every step from the same combined action space (cores.ActionLayout, (K + 2) (1 + sum_p V^p)
+ 1 actions): the speaker's legal actions are every action but the no-op, and its message is the action's sentence
(ActionLayout.messages, the reference wrapper's enumeration); the listener's are as in Table 2 (the no-op only,
except at the decision step). Exploration: actor i's epsilon (r2d2.actor_epsilons) for both of its players, drawn
independently per player.

VDN (r2d2.VDNLearner): the team's Q is the sum of the players' Q, trained on the shared reward; a stored step holds
both players' inputs and actions (a player axis), the team's reward and done; both players' recurrent states are
stored with the sequence. SAD (Hu & Foerster 2019): each player's input also holds its partner's greedy action at the
previous step (one-hot; none at an episode's start), whether or not that action was the one played; it is the raw
action index, so the speaker's greedy message reaches the listener without the episode's vocabulary permutation (the
reference's SAD wrapper passes actions, not channel tokens; DEVIATIONS S16).

Evaluation (every eval_every observations, greedy, section 4.5's test-only protocol on the two-player game): ZSCT
accuracy as Table 2's. Language probe (the paper's section 4.1, "freezing the speaker agent's internal state at the end
of an episode and query what would be its subsequent utterances for all stimuli in the latest episode's dataset"): for
each of the first `probe_episodes` evaluation episodes to finish, the speaker's recurrent state after its last action
of the episode is frozen and, from it, the speaker is asked once per combination of the episode's symbolic space for
its greedy message, seeing that combination's first object-centric sample as its stimulus and otherwise its
episode's last (feedback) observation with round_id set to round 0 (a query game's first round). Its messages are
scored as Table 1's PS row is (probes.language_scores: topsim, posdis, bosdis on 256 factor-fixed points of the
episode's support split), and by the EoA listener (reprobench.s2b.eoa) trained on the support combinations with
these messages, scored on the query ones: faithful, one listener carried through the evaluation's probed episodes in
the order they finished, as the ORG wrapper's listener is never re-initialised (a new one at each evaluation, so that
an evaluation's score does not depend on the run's evaluation history); corrected, a fresh listener per episode
(DEVIATIONS S28). Records hold each score's mean over the probed episodes and the mean number of distinct messages.
A speaker that says one message for everything scores 0.0 on each, as ReferentialGym logs it (probes.language_scores;
DEVIATIONS S22), and counts in the mean; the mean skips only the NaN of an episode whose picked points all got one
message while its support split did not (topsim undefined there, NaN in ReferentialGym's log too).

Exact resume as train.Trainer's: the environment is rebuilt by stepping it with all-EoS messages and the saved
step's last message.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch

from reprobench.s2b import eoa, probes, stimuli
from reprobench.s2b.cores import build_network
from reprobench.s2b.env import mode_names
from reprobench.s2b.marl_env import PLAYERS, MetaReferentialGameTwoPlayerVector
from reprobench.s2b.r2d2 import VDNLearner, epsilon_schedule, to_tensors
from reprobench.s2b.train import (
    TrainConfig,
    Trainer,
    _Actors,
    _greedy,
    _state_spec,
    observation_inputs,
    step_spec,
)
from reprobench.s2b.train import (
    identity as train_identity,
)

SPEAKER, LISTENER = 0, 1
PROBE_METRICS = ("eoa_accuracy", *probes.SPEAKER_METRICS)


@dataclass(frozen=True)
class MARLConfig:
    """What the multi-agent run adds to a TrainConfig: SAD on or off, how many evaluation episodes are probed, the EoA
    listener's settings (the paper's: 512 epochs)."""

    sad: bool = True
    probe_episodes: int = 10
    eoa: eoa.EoAConfig = field(default_factory=eoa.EoAConfig)

    def __post_init__(self):
        if not isinstance(self.sad, bool):
            raise ValueError(f"sad must be a bool, got {self.sad!r}")
        if isinstance(self.probe_episodes, bool) or not isinstance(self.probe_episodes, int) or \
                self.probe_episodes < 0:
            raise ValueError(f"probe_episodes must be a non-negative integer, got {self.probe_episodes!r}")

    @classmethod
    def small(cls) -> MARLConfig:
        """The test-sized probe (the default scale): 4 probed episodes, a narrow EoA listener trained 16 epochs."""
        return cls(probe_episodes=4, eoa=eoa.EoAConfig.tiny(epochs=16))


def identity(config: TrainConfig, marl: MARLConfig) -> dict:
    """The checkpoint identity of a multi-agent run."""
    return train_identity(config) | {"s2b_marl": dataclasses.asdict(marl)}


class _Team(_Actors):
    """_Actors with a player axis (speaker 0, listener 1): obs {name: (N, 2, ...)}, state {name: (N, 2, ...)},
    prev_action and partner (the partner's previous greedy action, SAD's input, -1 none) (N, 2); the previous reward is
    the team's, (N,)."""

    def __init__(self, net, n: int, n_rounds: int, modes: list[str], obs, info):
        super().__init__(net, n, n_rounds, modes, obs, info)
        self.state = {k: v.view(n, len(PLAYERS), *v.shape[1:]) for k, v in net.initial_state(n * len(PLAYERS)).items()}
        self.prev_action = np.full((n, len(PLAYERS)), -1, dtype=np.int64)
        self.partner = np.full((n, len(PLAYERS)), -1, dtype=np.int64)

    def observation(self, obs, info) -> dict[str, np.ndarray]:
        per = [observation_inputs(obs[p], info, self.n_rounds) for p in PLAYERS]
        out = {k: np.stack([x[k] for x in per], axis=1) for k in per[0]}
        out["decision"][:, SPEAKER] = True  # the speaker may utter at every step: every action but the no-op is legal
        return out

    def inputs(self) -> dict[str, np.ndarray]:
        return {**self.obs, "prev_reward": np.repeat(self.prev_reward[:, None, None], len(PLAYERS), axis=1),
                "prev_action": self.prev_action.copy(), "partner_action": self.partner.copy()}

    def advance(self, obs, info, actions, rewards, terminated, new_state, greedy=None) -> None:
        reset = self.pending
        self.partner = np.where(reset[:, None], -1, np.asarray(greedy)[:, ::-1]).astype(np.int64)
        super().advance(obs, info, actions, rewards, terminated, new_state)

    def state_dict(self) -> dict:
        return {**super().state_dict(), "partner": self.partner}

    def load_state_dict(self, state, device) -> None:
        super().load_state_dict(state, device)
        self.prev_action = np.array(state["prev_action"], dtype=np.int64).reshape(self.n, len(PLAYERS))
        self.partner = np.array(state["partner"], dtype=np.int64)


def _flat(tree: dict, n: int) -> dict:
    """(N, 2, ...) -> (2N, ...), actor-major (actor i's speaker then listener)."""
    return {k: v.reshape(n * len(PLAYERS), *v.shape[2:]) for k, v in tree.items()}


class MARLTrainer(Trainer):
    """One multi-agent run (see the module docstring): train.Trainer with two players per actor."""

    def __init__(self, config: TrainConfig, marl: MARLConfig | None = None, device: torch.device | str = "cpu"):
        if config.task != "marl":
            raise ValueError(f"MARLTrainer trains task 'marl', got {config.task!r}")
        if config.recon.enabled:
            raise ValueError("recon.enabled must be False for the multi-agent runs (no reconstruction, DEVIATIONS S16)")
        if config.actions != "combined":
            raise ValueError("actions must be 'combined': the speaker's actions are sentences")
        self.marl = marl or MARLConfig()
        super().__init__(config, device)

    # -- Trainer's hooks -------------------------------------------------------------------------------------------
    def _make_env(self, env_kwargs, num_envs: int, seed: int):
        return MetaReferentialGameTwoPlayerVector(num_envs=num_envs, seed=seed, **env_kwargs)

    def _network(self):
        return build_network(self.config.net, self.dims, self.layout, partner_action=self.marl.sad)

    def _learner(self, net) -> VDNLearner:
        return VDNLearner(net, self.config.r2d2, self.config.n_actors, self.device)

    def _specs(self) -> tuple[dict, dict]:
        p = len(PLAYERS)
        spec = step_spec(self.dims)
        team = {k: ((p, *shape), dtype) for k, (shape, dtype) in spec.items() if k not in ("reward", "done")}
        team["partner_action"] = ((p,), np.dtype(np.int64))
        team["reward"], team["done"] = spec["reward"], spec["done"]
        state = _state_spec(self.net.initial_state(1))
        return team, {k: ((p, *shape), dtype) for k, (shape, dtype) in state.items()}

    def _actors(self, obs, info) -> _Team:
        return _Team(self.net, self.config.n_actors, self.env.config.n_rounds, self.modes, obs, info)

    def _rebuild_env(self):
        env, n = self.env, self.config.n_actors
        obs, info = env.reset(seed=self.config.seed)
        n_decisions = env.config.n_decisions
        wrong = np.asarray(self.actors.obs["previous_game_result"])[:, LISTENER, 0] > 0
        silent = np.zeros((n, env.config.max_sentence_length), dtype=np.int64)
        last = np.asarray(self.actors.obs["comm"])[:, SPEAKER].astype(np.int64)  # the speaker's own last message
        for s in range(self.env_steps):
            target = np.asarray(info["target_decision"], dtype=np.int64)
            obs, _, _, _, info = env.step(last if s == self.env_steps - 1 else silent,
                                          np.where(wrong, (target + 1) % n_decisions, target))
        return obs, info

    # -- one environment step ----------------------------------------------------------------------------------------
    def _act(self) -> np.ndarray:
        r, a, n = self.config.r2d2, self.actors, self.config.n_actors
        inp = a.inputs()
        flat = _flat(inp, n)
        t_inp = to_tensors(flat, self.device)
        q, new_state = self.learner.q_values(t_inp, _flat(a.state, n))
        greedy = _greedy(self.net, q, t_inp["decision"])
        eps = np.repeat(epsilon_schedule(self.observations, self.final_eps, r.eps_start, r.eps_decay), len(PLAYERS))
        explore = self.rng.random(len(greedy)) < eps
        actions = np.where(explore, self.layout.random_actions(self.rng, flat["decision"]), greedy).reshape(n, -1)
        greedy = greedy.reshape(n, -1)
        obs, reward, terminated, _, info = self.env.step(self.layout.messages(actions[:, SPEAKER]),
                                                         self.layout.decisions(actions[:, LISTENER]))
        active, done = self._store(a, inp, actions, reward, terminated)
        self._count_decisions(info, active, done)
        self.observations += int(active.sum())
        self.env_steps += 1
        self.episodes += int(done.sum())
        a.advance(obs, info, actions, reward, terminated,
                  {k: v.view(n, len(PLAYERS), *v.shape[1:]) for k, v in new_state.items()}, greedy)
        return done

    # -- evaluation ----------------------------------------------------------------------------------------------------
    def evaluate(self) -> dict[str, float]:
        """Greedy team episodes on the evaluation environment (Table 2's protocol), with the language probe of the
        first probe_episodes episodes to finish."""
        c = self.config
        env = MetaReferentialGameTwoPlayerVector(num_envs=c.eval_actors, seed=c.eval_seed, keep_spaces=True, **c.env)
        modes = [str(m) for m in mode_names(env.config)]
        index = {m: i for i, m in enumerate(modes)}
        obs, info = env.reset(seed=c.eval_seed)
        team = _Team(self.net, c.eval_actors, env.config.n_rounds, modes, obs, info)
        quota = math.ceil(c.eval_episodes / c.eval_actors)
        finished = np.zeros(c.eval_actors, dtype=np.int64)
        games, wins = np.zeros(len(modes), dtype=np.int64), np.zeros(len(modes), dtype=np.int64)
        probed: list[tuple] = []  # (space, messages per combination, distinct messages)
        with torch.no_grad():
            while (finished < quota).any():
                mode = np.array([index[m] for m in info["mode"]], dtype=np.int64)
                inp = to_tensors(_flat(team.inputs(), c.eval_actors), self.device)
                q, new_state = self.net.step(inp, _flat(team.state, c.eval_actors))
                greedy = _greedy(self.net, q, inp["decision"]).reshape(c.eval_actors, -1)
                counting = ~team.pending & (finished < quota)
                obs, reward, terminated, _, info = env.step(self.layout.messages(greedy[:, SPEAKER]),
                                                            self.layout.decisions(greedy[:, LISTENER]))
                decided = np.asarray(info["decided"]) & counting
                np.add.at(games, mode[decided], 1)
                np.add.at(wins, mode[decided & np.asarray(info["correct"])], 1)
                team.advance(obs, info, greedy, reward, terminated,
                             {k: v.view(c.eval_actors, len(PLAYERS), *v.shape[1:]) for k, v in new_state.items()},
                             greedy)
                ends = np.flatnonzero(terminated & counting)
                if len(ends) and len(probed) < self.marl.probe_episodes:
                    spaces = env.current_spaces()  # (the terminated episodes' own: they reset on the next step)
                    for i in ends[:self.marl.probe_episodes - len(probed)].tolist():
                        probed.append(self._ask_speaker(team, i, spaces[i]))
                finished += terminated & counting
        out = {}
        for m, name in enumerate(modes):
            out[f"accuracy/{name}"] = float(wins[m] / games[m]) if games[m] else float("nan")
            out[f"decisions/{name}"] = int(games[m])
        return {**out, **self._language(probed)}

    @torch.no_grad()
    def _ask_speaker(self, team: _Team, i: int, space: stimuli.SymbolicSpace) -> tuple:
        """The frozen speaker of evaluation actor i asked once per combination of `space` (see the module docstring):
        (space, messages (C, L) in combination index order, number of distinct messages)."""
        d = space.n_values
        combos = stimuli.combinations(d)
        n = len(combos)
        inp = {k: np.repeat(v[i:i + 1, SPEAKER], n, axis=0) for k, v in team.inputs().items()}
        inp["stimulus"] = inp["stimulus"].copy()
        inp["stimulus"][:, :space.n_dims] = stimuli.observe(space, combos, 0)  # (K = 0: the whole stimulus)
        inp["round_id"] = np.zeros_like(inp["round_id"])
        inp["round_id"][:, 0] = 1.0
        t_inp = to_tensors(inp, self.device)
        state = {k: v[i:i + 1, SPEAKER].expand(n, *v.shape[2:]).contiguous() for k, v in team.state.items()}
        q, _ = self.net.step(t_inp, state)
        messages = self.layout.messages(_greedy(self.net, q, t_inp["decision"]))
        return space, messages, len(np.unique(messages, axis=0))

    def _language(self, probed: list[tuple]) -> dict[str, float]:
        """Mean over the probed episodes of the PS protocol's scores and of the EoA listener's query accuracy."""
        out = {k: float("nan") for k in PROBE_METRICS}
        out["probed_episodes"], out["distinct_messages"] = len(probed), float("nan")
        if not probed:
            return out
        c = self.config
        rows = []
        for k, (space, messages, _) in enumerate(probed):
            d, o = space.n_values, space.n_oc
            latents = stimuli.coordinates(stimuli.split(d, o)[0], d, o)
            lookup = messages[stimuli.combination_index(latents, d)]
            rng = np.random.default_rng([c.eval_seed, k])  # the same points at every evaluation
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # one message on the picked points: undefined topsim
                rows.append(probes.language_scores(rng, latents, lookup))

        def speaker_of(messages, d):
            return lambda lat: messages[stimuli.combination_index(lat, d)]

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # the EoA listeners are tiny: one thread is faster (eoa's docstring)
        try:
            acquired = eoa.ease_of_acquisition_sequence(
                [s for s, _, _ in probed], [speaker_of(m, s.n_values) for s, m, _ in probed], self.marl.eoa,
                seeds=[1000 * c.seed + k for k in range(len(probed))],  # listeners of their own per run
                listener=eoa.LISTENER_OF_VARIANT[c.env.get("variant", "faithful")])
        finally:
            torch.set_num_threads(threads)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all NaN: the mean is NaN
            for key in probes.SPEAKER_METRICS:
                out[key] = float(np.nanmean([r[key] for r in rows]))
        out["eoa_accuracy"] = float(np.mean([r["accuracy"] for r in acquired]))
        out["distinct_messages"] = float(np.mean([k for _, _, k in probed]))
        return out
