"""R2D2 training of the S2B listener: N actors as one batch on the vector environment, prioritised sequence replay,
learner updates at the reference's cadence, greedy ZSCT evaluations, exact resume (specs/s2b.md sections 4.1-4.5).

    config = TrainConfig()                          # tiny: LSTM core, 4 actors, 2000 observations (tests, timing)
    config = preset("table2", nbr_object_centric_samples=4, sampling_strategy="component-focused-2shots")
    records = run(config, checkpoint="run.pt")      # resumes from run.pt when it exists; saves at every evaluation
                                                    # and every checkpoint_every_s seconds between them
    trainer = Trainer(config); trainer.train(until=1000); state = trainer.state_dict()   # or step by step

Acting: actor i (environment i of a MetaReferentialGameVector) acts eps_i(t)-greedily (r2d2.actor_epsilons,
r2d2.epsilon_schedule; t = observations so far) among its legal actions, from its recurrent state, which is zero at an
episode's start, as are its previous action (none) and previous reward. Observations count real transitions summed
over actors (the spec's "observations"); the vector environment's next-step autoreset costs one extra step call per
episode, which is neither stored nor counted. Transitions are cut into stored sequences by
replay.RegymSequenceBuilder (R2D2Config.sequences "regym", as run) or replay.SequenceBuilder ("aligned").

Learning (r2d2.R2D2Learner): once the replay holds min_capacity experiences' worth of sequences (and the actors have
handled min_handled experiences), `updates_per_step`
train() calls per environment step (Table 2, Figure 6, recall: 1); with `episodes_per_cycle` (Table 4's Archi
cadence, faithful to `752e46d0`): a counter of finished episodes, and `train_calls_per_cycle` calls whenever it is a
multiple of `episodes_per_cycle` (0 included, so the calls also fire at every step before the first episode ends),
after which it is reset to 1. Reconstruction (r2d2.Reconstruction, when enabled): one update on the episodes that
finished at a step, and one every `period` steps on a random half of the last `store` finished episodes.

Evaluation (section 4.5, test-only protocol): greedy episodes on a separate vector environment of `eval_actors`
environments reseeded with `eval_seed` each time (the same episodes at every evaluation), ceil(eval_episodes /
eval_actors) episodes each. Accuracy per mode ("train0", ..., "test") = mean of info["correct"] over that mode's
decisions, pooled over episodes; "zsct_accuracy" is the "test" one. Records also hold the training episodes'
(eps-greedy, the reference's logged curves) per-episode accuracy per mode averaged over the episodes finished since the
previous record, the mean RL loss and the reconstruction's loss and accuracies over the same span. Accuracies are
fractions in [0, 1].

Resume: state_dict() holds the networks, both optimisers, the replay (its sum-tree and generator), the sequence
builder, the actors' observations, recurrent states and previous actions, the exploration generator, torch's
generators, every counter and the records so far. MetaReferentialGameVector has no state_dict, and its internals are
not this module's to read, so loading rebuilds the environment through its public API: it is reset with the run's
seed and stepped as many times as the run stepped it. That lands every sub-environment on the same episode and step,
because episodes are drawn from the sub-environment's own generator whatever the actions, and every call steps every
sub-environment; the decisions of the replay are right or wrong as the last one before the saved step was (read from
the saved previous_game_result), so previous_game_reward/result match too, and the observations are checked against
the saved ones. This costs one environment step per saved step (no network), seconds for a reference-scale run. A
run stopped at any step boundary and resumed from its state_dict gives bitwise the same records and parameters on
CPU (same thread count); run() therefore saves on wall-clock time between evaluations too (checkpoint_every_s), at
any step, mid-episode included.

Tasks (TrainConfig.task, reprobench.s2b.tasks): "meta_rg", the meta-referential game with the posdis speaker (Tables 2,
4, Figure 6), "recall", the recall task of Figure 5 seen through the same keys, and "marl", both players learned
(Table 1), which reprobench.s2b.marl.MARLTrainer trains through this Trainer's hooks (_make_env, _network, _learner,
_specs, _actors, _rebuild_env, _count_decisions). Not supported here: entropy regularisation (lambda 0 in every run).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from reprobench.core import checkpoint as ckpt
from reprobench.core.progress import Progress, log
from reprobench.s2b.cores import (
    ACTION_KINDS,
    ARCHI_CORES,
    INPUT_KEYS,
    USER,
    ActionLayout,
    InputDims,
    NetConfig,
    build_network,
    tiny_net,
)
from reprobench.s2b.env import mode_names
from reprobench.s2b.r2d2 import (
    R2D2Config,
    R2D2Learner,
    ReconConfig,
    Reconstruction,
    actor_epsilons,
    epsilon_schedule,
    to_device,
    to_tensors,
)
from reprobench.s2b.replay import PrioritizedSequenceReplay, RegymSequenceBuilder, SequenceBuilder
from reprobench.s2b.tasks import TASKS, make_env

# Table 2's environment (section 2.11): V = V_max + 1, L = N_dim = 3, R = 1, descriptive, K = 0, listener feedback,
# vocabulary permutations; O and S vary per cell (O = 1, S = 1 here).
TABLE2_ENV = dict(nbr_communication_rounds=1, vocab_size=6, max_sentence_length=3, descriptive=True, nbr_latents=3,
                  min_nbr_values_per_latent=2, max_nbr_values_per_latent=5, nbr_object_centric_samples=1,
                  nbr_distractors=0, sampling_strategy="component-focused-1shot",
                  use_communication_channel_permutations=True, provide_listener_feedback=True)


@dataclass(frozen=True)
class TrainConfig:
    """One training run. The defaults are the tiny scale (Table 2's environment and hyperparameters, test-sized
    networks, replay and budget); `preset` gives the reference's scale."""

    env: Mapping = field(default_factory=lambda: dict(TABLE2_ENV))
    task: str = "meta_rg"
    n_actors: int = 4
    actions: str = "combined"
    net: NetConfig = tiny_net("lstm")
    r2d2: R2D2Config = R2D2Config(batch_size=8, replay_capacity=4000, min_capacity=200)
    recon: ReconConfig = ReconConfig(hidden=32, store=8)
    budget: int = 2000
    eval_every: int = 1000
    eval_actors: int = 4
    eval_episodes: int = 4
    seed: int = 10
    eval_seed: int = 1_000_003

    def __post_init__(self):
        for name in ("n_actors", "budget", "eval_every", "eval_actors", "eval_episodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name in ("seed", "eval_seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.actions not in ACTION_KINDS:
            raise ValueError(f"actions must be one of {ACTION_KINDS}, got {self.actions!r}")
        if not isinstance(self.net, NetConfig) or not isinstance(self.r2d2, R2D2Config) or not isinstance(
                self.recon, ReconConfig):
            raise ValueError("net, r2d2 and recon must be NetConfig, R2D2Config and ReconConfig instances")
        if "seed" in self.env or "num_envs" in self.env:
            raise ValueError(f"env must not set seed or num_envs (TrainConfig sets them), got {dict(self.env)!r}")


def _table4(core: str, max_period: int, min_handled: int) -> dict:
    env = dict(TABLE2_ENV, vocab_size=4, max_nbr_values_per_latent=3)
    return dict(env=env, n_actors=32, net=NetConfig(core=core),
                r2d2=R2D2Config(batch_size=64, n_minibatches=4, unroll=40, burn_in=20, overlap=10, n_step=7,
                                store_every="stride",  # Regym after 0ad9ce36 (DEVIATIONS S18)
                                replay_capacity=10_000, min_capacity=1_000, min_handled=min_handled,
                                episodes_per_cycle=32, train_calls_per_cycle=4),
                recon=ReconConfig(period=2, adaptive=True, max_period=max_period), budget=10_000_000)


def _fig6(core: str) -> dict:
    env = dict(nbr_communication_rounds=3, vocab_size=6, max_sentence_length=1, descriptive=False, nbr_latents=3,
               min_nbr_values_per_latent=2, max_nbr_values_per_latent=5, nbr_object_centric_samples=1,
               nbr_distractors=3, nbr_shots=2, sampling_strategy=None, use_communication_channel_permutations=True,
               provide_listener_feedback=False)
    return dict(env=env, n_actors=16, net=NetConfig(core=core),
                r2d2=R2D2Config(lr=6.7e-4, batch_size=64, unroll=20, burn_in=0, overlap=10, n_step=3, tau=0.002,
                                replay_capacity=50_000, min_capacity=1_000),
                recon=ReconConfig(signals=("stimulus",)), budget=2_000_000)


def _recall(representation: str) -> dict:
    env = dict(representation=representation, nbr_latents=3, min_nbr_values_per_latent=2, max_nbr_values_per_latent=5,
               nbr_shots=2, max_episode_length="auto")
    return dict(task="recall", env=env, n_actors=32, actions="decision",
                net=NetConfig(core="dnc", dnc_controller=(128,)),
                r2d2=R2D2Config(unroll=40, burn_in=0, overlap=10, n_step=3, replay_capacity=50_000, min_capacity=1_000),
                recon=ReconConfig(enabled=False), budget=500_000)


def _table1(shots: int) -> dict:
    """Table 1's learned speaker and listener (reprobench.s2b.marl): the paper's environment (N_dim = 3, V in [2, 5],
    O = 4, S shots, 500k observations) with Table 4's Archi LSTM hyperparameters (the spec has no multi-agent ones;
    DEVIATIONS S16), no reconstruction."""
    env = dict(TABLE2_ENV, nbr_object_centric_samples=4,
               sampling_strategy=f"component-focused-{shots}shot{'s' if shots > 1 else ''}")
    return {**_table4("archi_lstm", 1000, 2000), "env": env, "task": "marl", "recon": ReconConfig(enabled=False),
            "budget": 500_000}


PRESETS = {
    # Table 2 (old Regym LSTM, 2022-05/07 sweeps): 32 actors, 5e6 observations, checkpoints every 5e5.
    "table2": lambda: dict(env=dict(TABLE2_ENV), n_actors=32, net=NetConfig(core="lstm"), r2d2=R2D2Config(),
                           recon=ReconConfig(period=10), budget=5_000_000, eval_every=500_000),
    "table4_lstm": lambda: _table4("archi_lstm", 1000, 2000),
    "table4_esbn": lambda: _table4("esbn", 200, 1),
    "table4_dcem": lambda: _table4("dcem", 200, 1),
    "fig6_lstm": lambda: _fig6("lstm"),
    "fig6_dnc": lambda: _fig6("dnc"),
    # Figure 5 (old Regym DNC, 2021-10 sweeps): SCS vs OHE stimuli, 32 actors, 5e5 observations
    "recall_scs": lambda: _recall("scs"),
    "recall_ohe": lambda: _recall("ohe"),
    # Table 1 (the multi-agent meta-RG, VDN + SAD self-play): S = 1 and S = 2
    "table1_s1": lambda: _table1(1),
    "table1_s2": lambda: _table1(2),
}
REFERENCE_EVAL = dict(eval_actors=100, eval_episodes=700, eval_every=500_000)  # ~5.5e4 greedy observations


def preset(name: str, **env_overrides) -> TrainConfig:
    """The reference-scale TrainConfig of experiment `name` (PRESETS), with environment keyword overrides (O, S, ...).
    Change anything else with dataclasses.replace."""
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {name!r}")
    kwargs = {**REFERENCE_EVAL, **PRESETS[name]()}
    kwargs["env"] = {**kwargs["env"], **env_overrides}
    return TrainConfig(**kwargs)


def small(config: TrainConfig) -> TrainConfig:
    """The test-sized version of a preset (the default scale): 4 actors, tiny_net widths (layer counts kept), a
    replay of 4000 experiences filled from 200 (min_handled at most 200), batches of 8 sequences, a 32-wide
    reconstruction head over the last 8 episodes, 4 greedy evaluation episodes on 4 actors. Everything structural
    stays the preset's: the task and its environment, the core, unroll, burn-in, n-step, the target period, the
    training cadence, the reconstruction's signals and schedule. small(preset("table2")) is TrainConfig() on Table
    2's environment."""
    net = tiny_net(config.net.core, fc_activation=config.net.fc_activation, dnc_recon=config.net.dnc_recon,
                   empty_slots=config.net.empty_slots, dnc_interface=config.net.dnc_interface,
                   dnc_controller=(16,) * len(config.net.dnc_controller),  # the recall DNC's one layer stays one
                   user_core=config.net.user_core)
    r2d2 = dataclasses.replace(config.r2d2, batch_size=8, replay_capacity=4000, min_capacity=200,
                               min_handled=min(config.r2d2.min_handled, 200))
    return dataclasses.replace(config, n_actors=4, net=net, r2d2=r2d2,
                               recon=dataclasses.replace(config.recon, hidden=32, store=8), eval_actors=4,
                               eval_episodes=4)


def corrected(config: TrainConfig) -> TrainConfig:
    """The corrected variant of a configuration: masked double-Q argmax (S10), the R2D2 paper's target period (S11),
    (for the DNC) reconstruction from the memory as the paper's text says (S12), the PER paper's normalised importance
    weights (S17), the R2D2 paper's aligned sequences (S18, S19), the priority mean over trained steps + 1e-6 (S20),
    only written memory slots read by the ESBN and the DCEM (S24), Graves et al.'s DNC interface (S25), and the
    environment's corrected variant (the meta-RG speaker's own OC sample, S3; the recall task's repeated shots
    without the stale pass, S5; without listener feedback each decision scored in its own phase, S21).
    The FCBody non-linearity has no corrected value (the as-run "all" is also the paper's text); the combined action
    space is kept (a parameterisation, not a bug)."""
    net = dataclasses.replace(config.net, empty_slots="masked", dnc_interface="paper",
                              dnc_recon="memory" if config.net.core == "dnc" else config.net.dnc_recon)
    return dataclasses.replace(config, net=net, env={**config.env, "variant": "corrected"},
                               r2d2=dataclasses.replace(config.r2d2, double_q="masked", target_update="period",
                                                        importance_weights="normalised", sequences="aligned",
                                                        priority_mean="trained", priority_eps=1e-6))


def step_spec(dims: InputDims) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """What one stored step holds: the network's inputs (cores.INPUT_KEYS) plus action, reward and done."""
    f = np.float32
    return {"stimulus": ((dims.stimulus,), f), "comm": ((dims.max_len,), np.int64), "prev_reward": ((1,), f),
            "round_id": ((dims.round_dim,), f), "role_id": ((2,), f), "mode_id": ((2,), f),
            "previous_game_result": ((2,), f), "previous_game_reward": ((1,), f), "prev_action": ((), np.int64),
            "decision": ((), np.bool_), "action": ((), np.int64), "reward": ((), f), "done": ((), np.bool_)}


def _state_spec(state: Mapping[str, torch.Tensor]) -> dict:
    return {k: (tuple(v.shape[1:]), v.detach().cpu().numpy().dtype) for k, v in state.items()}


def observation_inputs(obs, info, n_rounds: int) -> dict[str, np.ndarray]:
    """The network's per-observation inputs (step_spec's first keys, without prev_reward / prev_action) from a
    vector environment's batched observation and info: round_id and the decision flag (round_idx == R) come from
    the info, as the reference's wrappers add them to the observation."""
    return {"stimulus": np.asarray(obs["stimulus"], dtype=np.float32),
            "comm": np.asarray(obs["communication_channel"], dtype=np.int64),
            "round_id": np.asarray(info["round_id"], dtype=np.float32),
            "role_id": np.asarray(obs["role_id"], dtype=np.float32),
            "mode_id": np.asarray(obs["mode_id"], dtype=np.float32),
            "previous_game_result": np.asarray(obs["previous_game_result"], dtype=np.float32),
            "previous_game_reward": np.asarray(obs["previous_game_reward"], dtype=np.float32),
            "decision": np.asarray(info["round_idx"]) == n_rounds}


class _Actors:
    """N actors' side of the loop: current observation, recurrent state, previous action and reward, pending
    autoresets, the current observation's mode index."""

    def __init__(self, net, n: int, n_rounds: int, modes: list[str], obs, info):
        self.net, self.n, self.n_rounds, self.modes = net, n, n_rounds, {m: i for i, m in enumerate(modes)}
        self.state = net.initial_state(n)
        self.prev_action = np.full(n, -1, dtype=np.int64)
        self.prev_reward = np.zeros(n, dtype=np.float32)
        self.pending = np.zeros(n, dtype=bool)
        self.observe(obs, info)

    def observation(self, obs, info) -> dict[str, np.ndarray]:
        """The network's per-observation inputs of an environment step's (obs, info)."""
        return observation_inputs(obs, info, self.n_rounds)

    def observe(self, obs, info) -> None:
        self.obs = self.observation(obs, info)
        self.mode = np.array([self.modes[m] for m in info["mode"]], dtype=np.int64)

    def inputs(self) -> dict[str, np.ndarray]:
        return {**self.obs, "prev_reward": self.prev_reward[:, None].copy(), "prev_action": self.prev_action.copy()}

    def advance(self, obs, info, actions, rewards, terminated, new_state) -> None:
        """After an environment step: actors that autoreset on it start afresh, the others carry on."""
        reset = self.pending
        keep = to_device(~reset, next(iter(new_state.values())).device)
        self.state = {k: torch.where(keep.view(-1, *([1] * (v.dim() - 1))), v, torch.zeros_like(v))
                      for k, v in new_state.items()}
        self.prev_action = np.where(reset.reshape(-1, *([1] * (np.ndim(actions) - 1))), -1, actions).astype(np.int64)
        self.prev_reward = np.where(reset, 0.0, rewards).astype(np.float32)
        self.pending = np.asarray(terminated, dtype=bool).copy()
        self.observe(obs, info)

    def state_dict(self) -> dict:
        return {"obs": self.obs, "mode": self.mode, "state": {k: v.cpu() for k, v in self.state.items()},
                "prev_action": self.prev_action, "prev_reward": self.prev_reward, "pending": self.pending}

    def load_state_dict(self, state: Mapping, device) -> None:
        self.obs = {k: np.array(v) for k, v in state["obs"].items()}
        self.mode = np.array(state["mode"], dtype=np.int64)
        self.state = {k: v.to(device) for k, v in state["state"].items()}
        self.prev_action = np.array(state["prev_action"], dtype=np.int64)
        self.prev_reward = np.array(state["prev_reward"], dtype=np.float32)
        self.pending = np.array(state["pending"], dtype=bool)


def _greedy(net, q: torch.Tensor, decision: torch.Tensor) -> np.ndarray:
    """Argmax over the legal actions, to the host: the acting step's sync that no device can avoid (the numpy
    environments need the actions)."""
    return q.masked_fill(~net.legal_mask(decision), float("-inf")).argmax(-1).cpu().numpy()


def _pad_episodes(episodes: list[dict[str, np.ndarray]]):
    """Stack E episodes of different lengths: ({name: (E, T_max, ...)}, valid (E, T_max))."""
    t_max = max(len(ep["prev_action"]) for ep in episodes)
    out = {}
    for k in episodes[0]:
        arr = np.zeros((len(episodes), t_max, *episodes[0][k].shape[1:]), dtype=episodes[0][k].dtype)
        for i, ep in enumerate(episodes):
            arr[i, :len(ep[k])] = ep[k]
        out[k] = arr
    valid = np.arange(t_max)[None, :] < np.array([len(ep["prev_action"]) for ep in episodes])[:, None]
    return out, valid


def _replay_env(env, seed: int, steps: int, previous_result: np.ndarray):
    """Reset `env` with `seed` and step it `steps` times, deciding right (or, where previous_result (N, 2) says the
    last decision failed, wrong) at every decision: the public-API rebuild of a saved environment. Returns the last
    (obs, info)."""
    obs, info = env.reset(seed=seed)
    n_decisions = env.config.n_decisions
    wrong = np.asarray(previous_result)[:, 0] > 0
    for _ in range(steps):
        target = np.asarray(info["target_decision"], dtype=np.int64)
        obs, _, _, _, info = env.step(np.where(wrong, (target + 1) % n_decisions, target))
    return obs, info


class GreedyPolicy:
    """A network's greedy policy over the legal actions, for any number of environments: the policy interface of
    reprobench.s2b.agents (act, then observe the step's outcome), recurrent state kept per environment."""

    def __init__(self, net, layout: ActionLayout, modes: list[str], device: torch.device):
        self.net, self.layout, self.modes, self.device = net, layout, modes, device
        self.actors: _Actors | None = None

    @torch.no_grad()
    def act(self, obs, info) -> np.ndarray:
        if self.actors is None:
            n_rounds = np.asarray(info["round_id"]).shape[1] - 1
            self.actors = _Actors(self.net, len(info["mode"]), n_rounds, self.modes, obs, info)
        inp = to_tensors(self.actors.inputs(), self.device)
        q, self._state = self.net.step(inp, self.actors.state)
        self._actions = _greedy(self.net, q, inp["decision"])
        return self.layout.decisions(self._actions)

    def observe(self, obs, reward, terminated, truncated, info) -> None:
        self.actors.advance(obs, info, self._actions, reward, terminated, self._state)


def scored_modes(info, taken_on: np.ndarray, index: Mapping[str, int]) -> np.ndarray:
    """The mode index each decision of a step counts in: the environment's `decision_mode` (the meta-RG's moves a
    phase's last decision into the next mode under S2B's late phase switch, DEVIATIONS S21; the recall task's is the
    game's own), else `taken_on`, the mode of the observation it was taken on. 0 where nothing was decided."""
    if "decision_mode" not in info:
        return taken_on
    return np.array([index.get(m, 0) for m in info["decision_mode"]], dtype=np.int64)


def evaluate(policy, config: TrainConfig) -> dict[str, float]:
    """The test-only protocol (section 4.5) for any policy (act(obs, info) -> actions; observe(obs, reward,
    terminated, truncated, info)): greedy episodes on a vector environment of config.eval_actors environments
    reseeded with config.eval_seed (the same episodes at every evaluation), ceil(eval_episodes / eval_actors) episodes
    each. Returns {"accuracy/<mode>": fraction of right decisions, "decisions/<mode>": count} per mode."""
    c = config
    env = make_env(c.task, c.env, c.eval_actors, c.eval_seed)
    modes = [str(m) for m in mode_names(env.config)]
    index = {m: i for i, m in enumerate(modes)}
    obs, info = env.reset(seed=c.eval_seed)
    quota = math.ceil(c.eval_episodes / c.eval_actors)
    finished = np.zeros(c.eval_actors, dtype=np.int64)
    pending = np.zeros(c.eval_actors, dtype=bool)  # rows whose next step is an autoreset
    games, wins = np.zeros(len(modes), dtype=np.int64), np.zeros(len(modes), dtype=np.int64)
    while (finished < quota).any():
        mode = np.array([index[m] for m in info["mode"]], dtype=np.int64)
        actions = policy.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(actions)
        counting = ~pending & (finished < quota)
        decided = np.asarray(info["decided"]) & counting
        mode = scored_modes(info, mode, index)
        np.add.at(games, mode[decided], 1)
        np.add.at(wins, mode[decided & np.asarray(info["correct"])], 1)
        finished += terminated & counting
        policy.observe(obs, reward, terminated, truncated, info)
        pending = np.asarray(terminated, dtype=bool).copy()
    out = {}
    for m, name in enumerate(modes):
        out[f"accuracy/{name}"] = float(wins[m] / games[m]) if games[m] else float("nan")
        out[f"decisions/{name}"] = int(games[m])
    return out


def evaluation_due(observations: int, next_eval: int, budget: int, last_recorded: int | None) -> bool:
    """Whether a run records an evaluation now: at the first step past every multiple of eval_every, and at the
    budget (once)."""
    return observations >= next_eval or (observations >= budget and last_recorded != observations)


class Trainer:
    """One R2D2 run (see the module docstring). train(until) -> records; evaluate() -> one evaluation's accuracies."""

    def __init__(self, config: TrainConfig, device: torch.device | str = "cpu"):
        if config.task == "marl" and type(self) is Trainer:
            raise ValueError("task 'marl' (two learned players) trains with reprobench.s2b.marl.MARLTrainer")
        self.config, self.device = config, torch.device(device)
        n, r = config.n_actors, config.r2d2
        self.env = self._make_env(config.env, n, config.seed)
        gc = self.env.config
        self.layout = ActionLayout(config.actions, gc.n_decisions, gc.vocab_size, gc.max_sentence_length)
        self.dims = InputDims(gc.stimulus_dim, gc.vocab_size, gc.max_sentence_length, gc.n_rounds + 1,
                              self.layout.n_actions)
        self.modes = [str(m) for m in mode_names(gc)]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            self.learner = self._learner(self._network())
            self.recon = None
            if config.recon.enabled:
                scale = config.recon.stimulus_scale or ("raw" if config.net.core in (*ARCHI_CORES, USER) else "unit")
                self.recon = Reconstruction(self.learner.net, config.recon, gc.stimulus_dim, gc.vocab_size,
                                            gc.max_sentence_length, scale, self.device)
        self.net = self.learner.net
        spec, state_spec = self._specs()
        self.replay = PrioritizedSequenceReplay(r.replay_sequences, r.unroll, spec, state_spec, r.alpha, r.beta,
                                                r.priority_eps, seed=config.seed, weights=r.importance_weights)
        self.builder = (RegymSequenceBuilder(n, r.unroll, r.store_interval, spec, state_spec) if r.sequences == "regym"
                        else SequenceBuilder(n, r.unroll, r.overlap, spec, state_spec))
        self.rng = np.random.default_rng([config.seed, 1])
        self.final_eps = actor_epsilons(n, r.eps, r.eps_alpha)
        obs, info = self.env.reset(seed=config.seed)
        self.actors = self._actors(obs, info)
        self.observations = self.env_steps = self.episodes = 0
        self.cycle_counter = 0
        self.rec_countdown = config.recon.period
        self.next_eval = config.eval_every
        m = len(self.modes)
        self.games = np.zeros((n, m), dtype=np.int64)
        self.successes = np.zeros((n, m), dtype=np.int64)
        self.ep_acc_sum, self.ep_acc_n = np.zeros(m), np.zeros(m, dtype=np.int64)
        self.trajectories: list[dict[str, list]] = [{k: [] for k in INPUT_KEYS} for _ in range(n)]
        self.rec_store: list[dict[str, np.ndarray]] = []
        self.losses: list[torch.Tensor] = []
        self.rec_stats: list[dict[str, torch.Tensor]] = []
        self.records: list[dict] = []

    # -- what a subclass changes (reprobench.s2b.marl: two learned players) -----------------------------------------
    def _make_env(self, env_kwargs, num_envs: int, seed: int):
        return make_env(self.config.task, env_kwargs, num_envs, seed)

    def _network(self):
        return build_network(self.config.net, self.dims, self.layout)

    def _learner(self, net) -> R2D2Learner:
        return R2D2Learner(net, self.config.r2d2, self.config.n_actors, self.device)

    def _specs(self) -> tuple[dict, dict]:
        """What one stored step and one stored recurrent state hold."""
        return step_spec(self.dims), _state_spec(self.net.initial_state(1))

    def _actors(self, obs, info) -> _Actors:
        return _Actors(self.net, self.config.n_actors, self.env.config.n_rounds, self.modes, obs, info)

    def _rebuild_env(self):
        """The environment reset and stepped to the saved step (see the module docstring); returns (obs, info)."""
        return _replay_env(self.env, self.config.seed, self.env_steps, self.actors.obs["previous_game_result"])

    def _count_decisions(self, info, active: np.ndarray, done: np.ndarray) -> None:
        """The training episodes' accuracy per mode: count this step's decisions, and close finished episodes."""
        a = self.actors
        decided = np.asarray(info["decided"]) & active
        rows, mode = np.arange(a.n), scored_modes(info, a.mode, a.modes)
        self.games[rows, mode] += decided
        self.successes[rows, mode] += decided & np.asarray(info["correct"])
        for i in np.flatnonzero(done):
            played = self.games[i] > 0
            self.ep_acc_sum[played] += self.successes[i, played] / self.games[i, played]
            self.ep_acc_n[played] += 1
            self.games[i] = 0
            self.successes[i] = 0

    # -- one environment step ----------------------------------------------------------------------------------------
    def _store(self, a, inp: dict, actions, reward, terminated):
        """Add one step of every actor to its sequence builder (recurrent state included) and any finished windows
        to the replay; (active, done) of the step (an actor whose env is resetting is not active)."""
        active = ~a.pending
        done = terminated & active
        step = {**inp, "action": actions, "reward": reward.astype(np.float32), "done": done}
        # the states the actors acted from; the builder copies to the host those of the windows it stores (after the
        # actions' sync) and keeps the rest on the device
        windows = self.builder.add(step, a.state, active, done)
        if windows is not None:
            self.replay.add(*windows)
        self.replay.flush()  # the last update's priorities, here where the actions' sync has already waited
        return active, done

    def _act(self) -> np.ndarray:
        """One step of every actor; returns which actors finished an episode on it."""
        r, a = self.config.r2d2, self.actors
        inp = a.inputs()
        t_inp = to_tensors(inp, self.device)
        q, new_state = self.learner.q_values(t_inp, a.state)
        greedy = _greedy(self.net, q, t_inp["decision"])
        eps = epsilon_schedule(self.observations, self.final_eps, r.eps_start, r.eps_decay)
        explore = self.rng.random(a.n) < eps
        actions = np.where(explore, self.layout.random_actions(self.rng, inp["decision"]), greedy)
        obs, reward, terminated, _, info = self.env.step(self.layout.decisions(actions))
        active, done = self._store(a, inp, actions, reward, terminated)
        if self.recon is not None:
            for i in np.flatnonzero(active):
                for k in INPUT_KEYS:
                    self.trajectories[i][k].append(inp[k][i])
        self._count_decisions(info, active, done)
        self.observations += int(active.sum())
        self.env_steps += 1
        self.episodes += int(done.sum())
        a.advance(obs, info, actions, reward, terminated, new_state)
        return done

    def _learn(self, finished: int) -> None:
        r = self.config.r2d2
        ready = len(self.replay) >= r.min_sequences and self.observations >= r.min_handled
        calls = r.updates_per_step
        if r.episodes_per_cycle is not None:
            self.cycle_counter += finished
            calls = 0
            if self.cycle_counter % r.episodes_per_cycle == 0 and ready:
                calls = r.train_calls_per_cycle
                self.cycle_counter = 1
        if not ready:
            return
        for _ in range(calls):
            self.losses.append(self.learner.train(self.replay))

    def _reconstruct(self, done: np.ndarray) -> None:
        if self.recon is None:
            return
        published = []
        for i in np.flatnonzero(done):
            ep = {k: np.stack(v) for k, v in self.trajectories[i].items()}
            self.trajectories[i] = {k: [] for k in INPUT_KEYS}
            published.append(ep)
        if published:
            self.rec_stats.append(self._rec_update(published))
            self.rec_store = (self.rec_store + published)[-self.config.recon.store:]
        self.rec_countdown -= 1
        if self.rec_countdown <= 0 and self.rec_store:
            k = max(1, len(self.rec_store) // 2)
            pick = np.sort(self.rng.choice(len(self.rec_store), size=k, replace=False))
            stats = self._rec_update([self.rec_store[j] for j in pick])
            self.rec_stats.append(stats)
            if self.config.recon.adaptive:
                self.recon.adapt(float(stats["stimulus_accuracy"]))  # a host sync, only with the adaptive period
            self.rec_countdown = self.recon.period

    def _rec_update(self, episodes: list[dict[str, np.ndarray]]) -> dict[str, torch.Tensor]:
        arrays, valid = _pad_episodes(episodes)
        return self.recon.update(to_tensors(arrays, self.device), to_device(valid, self.device))

    def step(self) -> None:
        """One environment step of every actor, then the learner's and the reconstruction's updates due."""
        done = self._act()
        self._learn(int(done.sum()))
        self._reconstruct(done)

    # -- evaluation and records --------------------------------------------------------------------------------------
    def evaluate(self) -> dict[str, float]:
        """Greedy episodes on the evaluation environment (module-level `evaluate`)."""
        return evaluate(self.policy(), self.config)

    def policy(self) -> GreedyPolicy:
        """The current network as a greedy policy (the test-only protocol's agent)."""
        return GreedyPolicy(self.net, self.layout, self.modes, self.device)

    def _record(self) -> dict:
        evaluation = self.evaluate()
        rec = {"observations": self.observations, "env_steps": self.env_steps, "episodes": self.episodes,
               "updates": self.learner.updates, "target_copies": self.learner.target_copies,
               "replay_sequences": len(self.replay),
               "epsilon_mean": float(epsilon_schedule(self.observations, self.final_eps, self.config.r2d2.eps_start,
                                                      self.config.r2d2.eps_decay).mean()),
               "loss": float(torch.stack(self.losses).mean()) if self.losses else float("nan"),
               "zsct_accuracy": evaluation["accuracy/test"], **evaluation}  # NaN for recall (no query phase)
        for m, name in enumerate(self.modes):
            rec[f"train_accuracy/{name}"] = (float(self.ep_acc_sum[m] / self.ep_acc_n[m]) if self.ep_acc_n[m]
                                             else float("nan"))
        if self.recon is not None:
            for key in ("loss", "stimulus_accuracy", "comm_accuracy"):
                values = torch.stack([s[key] for s in self.rec_stats]) if self.rec_stats else torch.zeros(0)
                rec[f"rec_{key}"] = float(values.nanmean()) if len(values) else float("nan")
            rec["rec_period"] = self.recon.period
        self.losses, self.rec_stats = [], []
        self.ep_acc_sum[:] = 0
        self.ep_acc_n[:] = 0
        return rec

    def train(self, until: int | None = None, progress: Progress | None = None,
              after_step: Callable[[], None] | None = None) -> list[dict]:
        """Step until `until` observations (default: the budget), recording an evaluation at the first step past
        every multiple of eval_every and at the budget. `after_step()` is called after every step and its record, at
        a step boundary where state_dict() resumes exactly (run's timed checkpoints)."""
        until = self.config.budget if until is None else until
        while self.observations < until:
            before = self.observations
            self.step()
            if progress is not None:
                progress.update(self.observations - before)
            last = self.records[-1]["observations"] if self.records else None
            if evaluation_due(self.observations, self.next_eval, self.config.budget, last):
                self.records.append(self._record())
                while self.next_eval <= self.observations:
                    self.next_eval += self.config.eval_every
            if after_step is not None:
                after_step()
        return self.records

    # -- resume ------------------------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        trajectories = [{k: (np.stack(v) if v else np.zeros((0,), dtype=np.float32)) for k, v in tr.items()}
                        for tr in self.trajectories]
        return {"learner": self.learner.state_dict(),
                "recon": self.recon.state_dict() if self.recon is not None else None,
                "replay": self.replay.state_dict(), "builder": self.builder.state_dict(),
                "actors": self.actors.state_dict(),
                "rng": copy.deepcopy(self.rng.bit_generator.state), "torch_rng": ckpt.rng_states(self.device),
                "counters": {"observations": self.observations, "env_steps": self.env_steps,
                             "episodes": self.episodes, "cycle_counter": self.cycle_counter,
                             "rec_countdown": self.rec_countdown, "next_eval": self.next_eval},
                "games": self.games, "successes": self.successes, "ep_acc_sum": self.ep_acc_sum,
                "ep_acc_n": self.ep_acc_n, "trajectories": trajectories, "rec_store": list(self.rec_store),
                "losses": [x.cpu() for x in self.losses],
                "rec_stats": [{k: v.cpu() for k, v in s.items()} for s in self.rec_stats],
                "records": copy.deepcopy(self.records)}

    def load_state_dict(self, state: Mapping) -> None:
        self.learner.load_state_dict(state["learner"])
        if self.recon is not None:
            self.recon.load_state_dict(state["recon"])
        self.replay.load_state_dict(state["replay"])
        self.builder.load_state_dict(state["builder"])
        self.actors.load_state_dict(state["actors"], self.device)
        for k, v in state["counters"].items():
            setattr(self, k, int(v))
        obs, info = self._rebuild_env()
        for k, v in self.actors.observation(obs, info).items():
            if not np.array_equal(v, self.actors.obs[k]):
                raise ValueError(f"the rebuilt environment's observation '{k}' differs from the saved one: the state "
                                 "belongs to another environment version or configuration")
        self.rng.bit_generator.state = state["rng"]
        ckpt.restore_rng_states(state["torch_rng"], self.device)
        self.games = np.array(state["games"], dtype=np.int64)
        self.successes = np.array(state["successes"], dtype=np.int64)
        self.ep_acc_sum = np.array(state["ep_acc_sum"], dtype=np.float64)
        self.ep_acc_n = np.array(state["ep_acc_n"], dtype=np.int64)
        self.trajectories = [{k: list(v) for k, v in tr.items()} for tr in state["trajectories"]]
        self.rec_store = [{k: np.array(v) for k, v in ep.items()} for ep in state["rec_store"]]
        self.losses = [x.to(self.device) for x in state["losses"]]
        self.rec_stats = [{k: v.to(self.device) for k, v in s.items()} for s in state["rec_stats"]]
        self.records = copy.deepcopy(list(state["records"]))


def identity(config: TrainConfig) -> dict:
    """The checkpoint identity of a run: its whole configuration."""
    return {"s2b_r2d2": dataclasses.asdict(config) | {"env": dict(config.env)}}


def run(config: TrainConfig, checkpoint: str | None = None, device: torch.device | str = "cpu",
        progress: bool = False, marl=None, checkpoint_every_s: float = 600.0) -> list[dict]:
    """Train to the budget and return the records. With `checkpoint`: resume from it when it holds this
    configuration's run, and save to it at every evaluation and, between evaluations, at the first step boundary at
    least `checkpoint_every_s` seconds after the last save (paper.yaml spaces evaluations 5e5-1e6 observations
    apart: a preempted job loses at most checkpoint_every_s plus a step and a save). Every save is the whole
    state_dict, so a run resumed from a timed checkpoint writes the records of an uninterrupted one, bit for bit on
    CPU; saving reads the state and changes none of it. Task 'marl' runs reprobench.s2b.marl.MARLTrainer with `marl`
    (a marl.MARLConfig; None: its defaults)."""
    if not checkpoint_every_s >= 0:  # NaN too: it would never save
        raise ValueError(f"checkpoint_every_s must be >= 0, got {checkpoint_every_s!r}")
    if config.task == "marl":
        from reprobench.s2b import marl as marl_module

        marl = marl or marl_module.MARLConfig()
        trainer, ident = marl_module.MARLTrainer(config, marl, device), marl_module.identity(config, marl)
    else:
        trainer, ident = Trainer(config, device), identity(config)
    blob = ckpt.load(checkpoint, ident)
    if blob is not None:
        trainer.load_state_dict(blob["trainer"])
        log(f"resuming from checkpoint {checkpoint} at {trainer.observations} of {config.budget} observations")
    bar = Progress(config.budget, f"s2b r2d2 {config.net.core}") if progress else None
    if bar is not None:
        bar.update(trainer.observations)
    last_save = time.monotonic()

    def save() -> None:
        nonlocal last_save
        ckpt.save(checkpoint, ident, trainer=trainer.state_dict())
        last_save = time.monotonic()

    def timed() -> None:
        # not at an evaluation (run saves there anyway) nor at the budget (the run is about to finish)
        just_recorded = bool(trainer.records) and trainer.records[-1]["observations"] == trainer.observations
        if (not just_recorded and trainer.observations < config.budget
                and time.monotonic() - last_save >= checkpoint_every_s):
            save()

    while trainer.observations < config.budget:
        trainer.train(until=min(config.budget, trainer.next_eval), progress=bar,
                      after_step=timed if checkpoint else None)
        if checkpoint:
            save()
    if bar is not None:
        bar.close()
    return trainer.records
