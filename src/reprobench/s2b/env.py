"""The meta-referential game of S2B as a single-agent gymnasium environment: the agent is the listener, the speaker
is the rule-based posdis speaker (specs/s2b.md section 2; the single-agent listener setting of the paper's Table 2).

One episode (section 2.7) = a fresh symbolic space (reprobench.s2b.stimuli), `nbr_shots` passes over the supporting
phase's targets, then one pass over the querying (ZSCT) phase's targets; every target is one referential game (RG).
With R = `nbr_communication_rounds` and listener feedback, an RG is R + 2 observations (section 2.5):

    round 0 .. R-1   the speaker utters (the listener's action is ignored); the listener sees the previous utterance
    round R          the listener's `decision` is scored by this step: +1 right, else 0 (support) or -2 (query)
    feedback (-1)    the listener's stimulus is the speaker's (the true target first), previous_game_* are updated

The episode ends on the step that returns the last feedback observation: (R + 2) #RGs - 1 steps. Without feedback an
RG is R + 1 observations, the decision step returns the next RG's round 0, and the episode ends on the last decision,
(R + 1) #RGs steps.

Observation (a Dict; the reference returns every key but `stimulus` with a leading batch dimension of 1, dropped
here so that observations lie in the declared space):
    stimulus (K+1)*N_dim float32 (the listener's K + 1 stimuli, shuffled, slot-major), communication_channel (L,)
    int64 (the speaker's previous utterance in the listener's token space), other_agent_id (10,) float32,
    role_id (2,) int8 = [0, 1] (listener), mode_id (2,) int8 ([1, 0] support, [0, 1] query),
    previous_game_reward (1,) float32, previous_game_result (2,) int8 ([1, 0] failure, [0, 1] success, 0 at first).
Action: Dict(decision=Discrete(K + 1 + descriptive), communication_channel=MultiDiscrete([V + 1] * L)) as the
reference's; the listener's message is ignored (the posdis speaker does not listen). A bare integer is read as the
decision. "None of them" is the last decision, K + 1 (section 2.4).
Info (plain Python values and small arrays): `phase` ("support"/"query") and `mode` ("train<k>"/"test") of the
returned observation's game, `round_idx` (-1 at feedback) and `round_id` ((R + 1,) int8 one-hot, zeros at -1),
`game_index`, the privileged `target_decision`, `speaker_latents` (N_dim,) and `listener_latents` (K + 1, N_dim)
int64, and for the action just taken `decided` (this step scored a decision), `correct` and `decision_phase`
("support"/"query", "" when nothing was scored). ZSCT accuracy = mean of `correct` over steps with
decision_phase == "query".

Faithful/corrected and other options (specs/s2b.md sections 6.3-6.4):
- variant: "faithful" (default): the speaker sees a uniformly random object-centric (OC) sample of the target, so a
  listener that keeps the target sees the speaker's very vector with probability 1/O (section 1.3); "corrected":
  the speaker sees the target's own OC sample, so for O > 1 the listener never sees the speaker's vector.
- descriptive_target_ratio: None gives the reference's 1 / (1 + K + descriptive), P(keep the target), so all
  K + 2 answers are equiprobable; pass 1 / (K + 1) for runs of the 2022-12-08 .. 2023-01-12 window (section 2.8).
- query_all: False (faithful) queries the component-focused sample of the test split; True queries every test
  stimulus in index order (section 6.4, "query coverage").

Choices where the spec is silent:
- Randomness: one numpy Generator per environment (gymnasium's np_random, seeded by reset(seed=...); the first
  unseeded reset uses the constructor's `seed`, 1337 as in the reference). A whole episode, every game's random draws
  included, is drawn at reset (`generate_episode`), in a fixed order; steps draw nothing. The vector environment
  calls the same function with per-environment generators, which is what makes the two step for step identical.
- Distractors: K distinct classes, uniform over the current phase's classes other than the target's (train classes
  in support, all classes in query), each shown through a uniformly random OC sample, the same vector to both
  players. The reference draws K distinct stimulus indices, which can only differ from this when O > 1 (two OC
  samples of one class); it also lets a same-class distractor through when O > 1 and object_centric=False, which
  this implementation never does (the decision would be ambiguous).
- The descriptive replacement of the listener's target is a uniformly random other class of the phase, with a
  uniformly random OC sample.
- The speaker's utterance at round R (the listener's decision step; the paper's NO-OP for the speaker) is the
  posdis message of round R - 1 again: the full message for R = 1, as the reference's speaker repeats it at every
  round_idx >= 0. It is what the feedback observation shows (or, without feedback, the next RG's round 0). At the
  feedback step the speaker utters all EoS, which the next RG's round 0 shows (the spec's trace).
- The terminal observation without feedback (there is no next RG) repeats the last decision observation's stimulus
  and message, with round_idx -1 and previous_game_* updated.
- Each support pass presents the same targets in the same order, with fresh distractors, coins and shuffles.
- The reference's unclipped stimuli are kept (section 1.2): a value can lie slightly outside the declared
  Box(-1, 1) (at most about 0.13 % of the samples of a dimension's first and last values).
- Unsupported reference options raise: observability other than "full", distractor_sampling other than
  "uniform", allow_listener_query=True (the spec does not describe them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import gymnasium
import numpy as np
from gymnasium import spaces

from reprobench.s2b import stimuli
from reprobench.s2b.speaker import EOS, posdis_message

VARIANTS = stimuli.VARIANTS
N_AGENT_ID = 10
SUPPORT, QUERY = 0, 1
PHASES = ("support", "query")
REWARD_SUCCESS, REWARD_FAIL_SUPPORT, REWARD_FAIL_QUERY = 1.0, 0.0, -2.0
SAMPLING_RE = re.compile(r"component-focused-(\d+)shots?")


def _int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def parse_sampling_strategy(strategy: str | None) -> int | None:
    """S of 'component-focused-<S>shot(s)' (the reference parses int(s.split('-')[-1].split('shot')[0])); None keeps
    None (every stimulus of a split, in index order)."""
    if strategy is None:
        return None
    match = SAMPLING_RE.fullmatch(strategy) if isinstance(strategy, str) else None
    if match is None or int(match.group(1)) < 1:
        raise ValueError(f"sampling_strategy must be None or 'component-focused-<S>shots' with S >= 1, "
                         f"got {strategy!r}")
    return int(match.group(1))


@dataclass(frozen=True)
class GameConfig:
    """The validated settings of one meta-referential game (the constructor arguments, section 2.1)."""

    n_rounds: int = 1
    vocab_size: int = 6
    max_sentence_length: int = 3
    descriptive: bool = False
    n_latents: int = 3
    v_min: int = 2
    v_max: int = 5
    n_oc: int = 1
    n_distractors: int = 1
    descriptive_target_ratio: float = 0.5
    object_centric: bool = False
    nbr_shots: int = 1
    shots: int | None = None
    use_permutations: bool = True
    listener_feedback: bool = False
    variant: str = "faithful"
    query_all: bool = False
    speaker: Callable | None = None

    @property
    def n_decisions(self) -> int:
        return self.n_distractors + 1 + int(self.descriptive)

    @property
    def stimulus_dim(self) -> int:
        return (self.n_distractors + 1) * self.n_latents

    @property
    def obs_per_game(self) -> int:
        return self.n_rounds + 2 if self.listener_feedback else self.n_rounds + 1


def make_config(nbr_communication_rounds=1, vocab_size=6, max_sentence_length=3, descriptive=False, nbr_latents=3,
                min_nbr_values_per_latent=2, max_nbr_values_per_latent=5, nbr_object_centric_samples=1,
                nbr_distractors=1, observability="full", distractor_sampling="uniform",
                descriptive_target_ratio=None, object_centric=None, nbr_shots=1, sampling_strategy=None,
                use_communication_channel_permutations=True, allow_listener_query=False,
                provide_listener_feedback=False, variant="faithful", query_all=False, speaker="posdis") -> GameConfig:
    """Validate the reference's keyword arguments (section 2.1 defaults) into a GameConfig; errors name the argument."""
    n_rounds = _int("nbr_communication_rounds", nbr_communication_rounds, 1)
    vocab = _int("vocab_size", vocab_size, 1)
    length = _int("max_sentence_length", max_sentence_length, 1)
    n_latents = _int("nbr_latents", nbr_latents, 2)  # one latent has no query split (2 test values needed)
    v_min = _int("min_nbr_values_per_latent", min_nbr_values_per_latent, 2)
    v_max = _int("max_nbr_values_per_latent", max_nbr_values_per_latent, 2)
    if v_min > v_max:
        raise ValueError(f"min_nbr_values_per_latent ({v_min}) must not exceed max_nbr_values_per_latent ({v_max})")
    n_oc = _int("nbr_object_centric_samples", nbr_object_centric_samples, 1)
    k = _int("nbr_distractors", nbr_distractors, 0)
    shots_passes = _int("nbr_shots", nbr_shots, 1)
    for name, value in (("descriptive", descriptive), ("use_communication_channel_permutations",
                        use_communication_channel_permutations), ("provide_listener_feedback",
                        provide_listener_feedback), ("query_all", query_all)):
        if not isinstance(value, bool | np.bool_):
            raise ValueError(f"{name} must be a bool, got {value!r}")
    if observability != "full":
        raise ValueError(f"observability must be 'full' (the only one the spec describes), got {observability!r}")
    if distractor_sampling != "uniform":
        raise ValueError(f"distractor_sampling must be 'uniform', got {distractor_sampling!r}")
    if allow_listener_query is not False:
        raise ValueError(f"allow_listener_query must be False (the spec does not describe it), "
                         f"got {allow_listener_query!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if descriptive_target_ratio is None:
        ratio = 1.0 / (1 + k + int(descriptive))
    else:
        ratio = float(descriptive_target_ratio)
        if not 0.0 <= ratio <= 1.0:
            raise ValueError(f"descriptive_target_ratio must lie in [0, 1], got {descriptive_target_ratio!r}")
    if object_centric is None:
        object_centric = n_oc > 1
    elif not isinstance(object_centric, bool | np.bool_):
        raise ValueError(f"object_centric must be a bool or None, got {object_centric!r}")
    if speaker == "posdis":
        speaker_fn = None
        if vocab < v_max + 1:
            raise ValueError(f"vocab_size must be >= max_nbr_values_per_latent + 1 = {v_max + 1} for the posdis "
                             f"speaker (token = class + 1 < vocab_size), got {vocab_size!r}")
        if n_rounds == 1 and length < n_latents:
            raise ValueError(f"max_sentence_length must be >= nbr_latents ({n_latents}) for the posdis speaker with "
                             f"one round, got {max_sentence_length!r}")
        if n_rounds > n_latents:
            raise ValueError(f"nbr_communication_rounds must be <= nbr_latents ({n_latents}) for the posdis speaker "
                             f"(one attribute per round), got {nbr_communication_rounds!r}")
    elif callable(speaker):
        speaker_fn = speaker
    else:
        raise ValueError(f"speaker must be 'posdis' or a callable (latents, round_idx) -> tokens, got {speaker!r}")
    return GameConfig(n_rounds=n_rounds, vocab_size=vocab, max_sentence_length=length, descriptive=bool(descriptive),
                      n_latents=n_latents, v_min=v_min, v_max=v_max, n_oc=n_oc, n_distractors=k,
                      descriptive_target_ratio=ratio, object_centric=bool(object_centric), nbr_shots=shots_passes,
                      shots=parse_sampling_strategy(sampling_strategy),
                      use_permutations=bool(use_communication_channel_permutations),
                      listener_feedback=bool(provide_listener_feedback), variant=variant, query_all=bool(query_all),
                      speaker=speaker_fn)


@dataclass(frozen=True)
class Episode:
    """One episode, drawn whole at reset, as a timeline of its T + 1 observations (index 0: the reset observation).

    Per observation t: stimulus (T+1, (K+1) N) float32, comm (T+1, L) int64, mode (T+1,) int8 (0 support, 1 query),
    shot (T+1,) int64 (support pass, -1 in query), round_idx, game, target (T+1,) int64, decision (T+1,) bool (a
    decision on observation t is scored), speaker_latents (T+1, N) and listener_latents (T+1, K+1, N) int64.
    Per episode: other_agent_id (10,) float32, vocabulary (V+1,) int64 (the listener's token for each speaker
    token, 0 -> 0), the space, and the support / query stimulus-centric indices (one pass, presentation order).
    """

    stimulus: np.ndarray
    comm: np.ndarray
    mode: np.ndarray
    shot: np.ndarray
    round_idx: np.ndarray
    game: np.ndarray
    target: np.ndarray
    decision: np.ndarray
    speaker_latents: np.ndarray
    listener_latents: np.ndarray
    other_agent_id: np.ndarray
    vocabulary: np.ndarray
    space: stimuli.SymbolicSpace
    support: np.ndarray
    query: np.ndarray

    @property
    def n_steps(self) -> int:
        return len(self.round_idx) - 1

    @property
    def n_games(self) -> int:
        return int(self.game[-1]) + 1


def _utterances(cfg: GameConfig, latents: np.ndarray) -> np.ndarray:
    """(G, R + 2, L) int64 speaker tokens (speaker's token space) per game for rounds 0..R and, last, the feedback
    step; posdis repeats round R - 1 at round R and says all EoS at feedback; tokens after the first EoS become EoS
    (the reference's channel regularisation)."""
    g, r, length = len(latents), cfg.n_rounds, cfg.max_sentence_length
    out = np.zeros((g, r + 2, length), dtype=np.int64)
    for slot, round_idx in enumerate([*range(r + 1), -1]):
        if cfg.speaker is None:
            msg = posdis_message(latents, max_len=length, vocab_size=cfg.vocab_size,
                                 round_idx=min(round_idx, r - 1), n_rounds=r)
        else:
            msg = np.asarray(cfg.speaker(latents.copy(), round_idx))
            if msg.shape != (g, length) or not np.issubdtype(msg.dtype, np.integer) or (msg < 0).any() or (
                    msg > cfg.vocab_size).any():
                raise ValueError(f"speaker returned {msg.shape} {msg.dtype} tokens; expected ({g}, {length}) "
                                 f"integers in [0, {cfg.vocab_size}]")
        out[:, slot] = msg[:, :length]
    out[np.cumsum(out == EOS, axis=-1) > 0] = EOS
    return out


def _games(rng: np.random.Generator, cfg: GameConfig, space: stimuli.SymbolicSpace, targets: np.ndarray,
           pool: np.ndarray) -> dict[str, np.ndarray]:
    """Every RG of one phase at once (section 2.4): targets (G,) stimulus-centric indices, pool (P,) the phase's
    classes, ascending. Returns per game: speaker (G, K+1, N) float32 vectors (target first), listener (G, K+1, N)
    (shuffled), speaker_latents, set_latents (G, K+1, N), listener_latents (G, K+1, N), target (G,) decisions."""
    g, k, o, d = len(targets), cfg.n_distractors, cfg.n_oc, space.n_values
    t_class = targets // o
    spk_j, lst_j = stimuli.player_oc_indices(rng, targets, o, cfg.variant)
    classes = np.empty((g, k + 1), dtype=np.int64)
    oc = np.empty((g, k + 1), dtype=np.int64)
    classes[:, 0], oc[:, 0] = t_class, spk_j
    if k > 0:
        if len(pool) - 1 < k:
            raise ValueError(f"nbr_distractors={k} needs at least {k + 1} classes in a phase, this episode has "
                             f"{len(pool)}")
        keys = rng.random((g, len(pool)))
        keys[pool[None, :] == t_class[:, None]] = np.inf
        classes[:, 1:] = pool[np.argsort(keys, axis=1, kind="stable")[:, :k]]
        oc[:, 1:] = rng.integers(o, size=(g, k))
    lst_classes, lst_oc = classes.copy(), oc.copy()
    if cfg.object_centric:
        lst_oc[:, 0] = lst_j
    removed = np.zeros(g, dtype=bool)
    if cfg.descriptive:
        removed = rng.random(g) >= cfg.descriptive_target_ratio
        if len(pool) < 2 and removed.any():
            raise ValueError("a descriptive game needs at least 2 classes in a phase to remove the target")
        other = rng.integers(max(len(pool) - 1, 1), size=g)
        other = other + (other >= np.searchsorted(pool, t_class))
        other_oc = rng.integers(o, size=g)
        lst_classes[removed, 0] = pool[np.minimum(other, len(pool) - 1)][removed]
        lst_oc[removed, 0] = other_oc[removed]
    order = np.argsort(rng.random((g, k + 1)), axis=1, kind="stable")  # listener slot s shows set element order[s]
    rows = np.arange(g)[:, None]
    lst_classes, lst_oc = lst_classes[rows, order], lst_oc[rows, order]
    target = np.where(removed, k + 1, np.argmax(order == 0, axis=1))

    def vectors(cls, j):
        coords = np.stack(np.unravel_index(cls.ravel(), tuple(d)), axis=1)
        return stimuli.observe(space, coords, j.ravel()).reshape(g, k + 1, -1), coords.reshape(g, k + 1, -1)

    spk_vec, set_lat = vectors(classes, oc)
    lst_vec, lst_lat = vectors(lst_classes, lst_oc)
    return {"speaker": spk_vec, "listener": lst_vec, "speaker_latents": set_lat[:, 0], "set_latents": set_lat,
            "listener_latents": lst_lat, "target": target.astype(np.int64)}


def generate_episode(rng: np.random.Generator, cfg: GameConfig) -> Episode:
    """Draw one whole episode (section 2.7) from `rng`, in this order: space, support and query sampling, the two
    vocabulary bijections, the other agent's id, the support games, the query games."""
    space = stimuli.sample_space(rng, n_dims=cfg.n_latents, v_min=cfg.v_min, v_max=cfg.v_max, n_oc=cfg.n_oc)
    d, o = space.n_values, cfg.n_oc
    train, test = stimuli.split(d, o)
    if cfg.shots is None:
        support, query = train, test
    else:
        support = stimuli.component_focused_sampling(rng, d, train, o, cfg.shots, "support")
        query = test if cfg.query_all else stimuli.component_focused_sampling(rng, d, test, o, cfg.shots, "query")
    v = cfg.vocab_size
    speaker_map = np.arange(v + 1)
    listener_map = np.arange(v + 1)
    if cfg.use_permutations:
        speaker_map[1:] = 1 + rng.permutation(v)  # decodes the speaker's token into the channel's
        listener_map[1:] = 1 + rng.permutation(v)  # encodes a channel token into the listener's
    vocabulary = listener_map[speaker_map]
    other_agent_id = rng.random(N_AGENT_ID).astype(np.float32)

    train_classes = np.unique(train // o)
    all_classes = np.arange(space.n_combinations)
    sup = _games(rng, cfg, space, np.tile(support, cfg.nbr_shots), train_classes)
    qry = _games(rng, cfg, space, query, all_classes)
    games = {key: np.concatenate([sup[key], qry[key]]) for key in sup}
    n_sup, n_games = len(support) * cfg.nbr_shots, len(support) * cfg.nbr_shots + len(query)
    mode = np.repeat(np.array([SUPPORT, QUERY], dtype=np.int8), [n_sup, len(query)])
    shot = np.concatenate([np.repeat(np.arange(cfg.nbr_shots), len(support)), np.full(len(query), -1)])
    utter = vocabulary[_utterances(cfg, games["speaker_latents"])]  # in the listener's token space

    r, per = cfg.n_rounds, cfg.obs_per_game
    g = np.repeat(np.arange(n_games), per)
    kk = np.tile(np.arange(per), n_games)  # 0..R rounds, R + 1 feedback
    if not cfg.listener_feedback:  # the terminal observation: no next game
        g, kk = np.append(g, n_games - 1), np.append(kk, -1)
    terminal = kk == -1
    feedback = kk == r + 1
    round_idx = np.where((kk >= 0) & (kk <= r), kk, -1)
    # comm: the speaker's utterance on the previous observation; utter slots 0..R rounds, R + 1 feedback
    prev_slot = r + 1 if cfg.listener_feedback else r
    src_game = np.where(kk == 0, g - 1, g)
    src_slot = np.where(kk == 0, prev_slot, np.where(feedback | terminal, r, kk - 1))
    comm = utter[np.maximum(src_game, 0), src_slot]
    comm[src_game < 0] = EOS
    lst = games["listener"].reshape(n_games, -1)
    spk = games["speaker"].reshape(n_games, -1)
    stimulus = np.where(feedback[:, None], spk[g], lst[g])
    listener_latents = np.where(feedback[:, None, None], games["set_latents"][g], games["listener_latents"][g])
    return Episode(stimulus=stimulus.astype(np.float32), comm=comm.astype(np.int64), mode=mode[g], shot=shot[g],
                   round_idx=round_idx.astype(np.int64), game=g.astype(np.int64),
                   target=games["target"][g], decision=kk == r, speaker_latents=games["speaker_latents"][g],
                   listener_latents=listener_latents.astype(np.int64), other_agent_id=other_agent_id,
                   vocabulary=vocabulary.astype(np.int64), space=space, support=support, query=query)


def observation_space(cfg: GameConfig) -> spaces.Dict:
    """The listener's observation space (section 2.2)."""
    return spaces.Dict({
        "communication_channel": spaces.MultiDiscrete([cfg.vocab_size + 1] * cfg.max_sentence_length),
        "mode_id": spaces.MultiBinary(2),
        "other_agent_id": spaces.Box(0.0, 255.0, (N_AGENT_ID,), dtype=np.float32),
        "previous_game_result": spaces.MultiBinary(2),
        "previous_game_reward": spaces.Box(-10.0, 10.0, (1,), dtype=np.float32),
        "role_id": spaces.MultiBinary(2),
        "stimulus": spaces.Box(-1.0, 1.0, (cfg.stimulus_dim,), dtype=np.float32),
    })


def action_space(cfg: GameConfig) -> spaces.Dict:
    """Dict(decision=Discrete(K + 1 + descriptive), communication_channel=MultiDiscrete([V + 1] * L))."""
    return spaces.Dict({
        "communication_channel": spaces.MultiDiscrete([cfg.vocab_size + 1] * cfg.max_sentence_length),
        "decision": spaces.Discrete(cfg.n_decisions),
    })


def mode_names(cfg: GameConfig) -> np.ndarray:
    """Object array of the reference's mode names indexed by shot + 1: 'test', 'train0', 'train1', ..."""
    return np.array(["test", *(f"train{k}" for k in range(cfg.nbr_shots))], dtype=object)


def reward_of(correct, mode):
    """+1 for a right decision, else 0 in support and -2 in query (section 2.6); works on arrays."""
    return np.where(correct, REWARD_SUCCESS, np.where(mode == SUPPORT, REWARD_FAIL_SUPPORT, REWARD_FAIL_QUERY))


class MetaReferentialGame(gymnasium.Env):
    """One S2B meta-referential game episode at a time, from the listener's side (see the module docstring).

    Constructor arguments are the reference's (section 2.1, same defaults) plus `variant`, `query_all` and
    `speaker` ('posdis', or a stateless callable (latents (G, N) int64, round_idx) -> (G, L) tokens in the
    speaker's token space, called once per round at reset).
    """

    metadata = {"render_modes": []}

    def __init__(self, nbr_communication_rounds: int = 1, vocab_size: int = 6, max_sentence_length: int = 3,
                 descriptive: bool = False, nbr_latents: int = 3, min_nbr_values_per_latent: int = 2,
                 max_nbr_values_per_latent: int = 5, nbr_object_centric_samples: int = 1, nbr_distractors: int = 1,
                 observability: str = "full", distractor_sampling: str = "uniform",
                 descriptive_target_ratio: float | None = None, object_centric: bool | None = None,
                 nbr_shots: int = 1, sampling_strategy: str | None = None,
                 use_communication_channel_permutations: bool = True, allow_listener_query: bool = False,
                 provide_listener_feedback: bool = False, seed: int | None = 1337, variant: str = "faithful",
                 query_all: bool = False, speaker: str | Callable = "posdis", render_mode: str | None = None):
        if render_mode is not None:
            raise ValueError(f"render_mode must be None (nothing to render), got {render_mode!r}")
        self.config = make_config(
            nbr_communication_rounds, vocab_size, max_sentence_length, descriptive, nbr_latents,
            min_nbr_values_per_latent, max_nbr_values_per_latent, nbr_object_centric_samples, nbr_distractors,
            observability, distractor_sampling, descriptive_target_ratio, object_centric, nbr_shots,
            sampling_strategy, use_communication_channel_permutations, allow_listener_query,
            provide_listener_feedback, variant, query_all, speaker)
        if seed is not None:
            _int("seed", seed, 0)
        self._seed = seed
        self.observation_space = observation_space(self.config)
        self.action_space = action_space(self.config)
        self._modes = mode_names(self.config)
        self.episode: Episode | None = None
        self._t = 0
        self._prev_reward = 0.0
        self._prev_result = np.zeros(2, dtype=np.int8)

    @property
    def vocabulary(self) -> np.ndarray:
        """(V + 1,) int64: the listener's token for each speaker token in this episode (a bijection, 0 fixed)."""
        if self.episode is None:
            raise RuntimeError("call reset() first")
        return self.episode.vocabulary.copy()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is None and self._np_random is None and self._seed is not None:
            seed = self._seed
        super().reset(seed=seed)
        self.episode = generate_episode(self.np_random, self.config)
        self._t = 0
        self._prev_reward = 0.0
        self._prev_result = np.zeros(2, dtype=np.int8)
        return self._observation(0), self._info(0, False, False, -1)

    def step(self, action):
        if self.episode is None:
            raise RuntimeError("call reset() before step()")
        ep, t = self.episode, self._t
        if t >= ep.n_steps:
            raise RuntimeError("the episode has ended; call reset()")
        decision = self._decision(action)
        decided = bool(ep.decision[t])
        correct = decided and decision == int(ep.target[t])
        reward = 0.0
        if decided:
            reward = float(reward_of(correct, ep.mode[t]))
            self._prev_reward = reward
            self._prev_result = np.array([0, 1] if correct else [1, 0], dtype=np.int8)
        self._t = t + 1
        terminated = self._t == ep.n_steps
        return (self._observation(self._t), reward, terminated, False,
                self._info(self._t, decided, correct, int(ep.mode[t]) if decided else -1))

    def _decision(self, action) -> int:
        value = action["decision"] if isinstance(action, Mapping) else action
        arr = np.asarray(value)
        if arr.size != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"action decision must be one integer in [0, {self.config.n_decisions}), got {value!r}")
        decision = int(arr.reshape(()))
        if not 0 <= decision < self.config.n_decisions:
            raise ValueError(f"action decision must lie in [0, {self.config.n_decisions}), got {decision}")
        return decision

    def _observation(self, t: int) -> dict[str, np.ndarray]:
        ep = self.episode
        mode = np.zeros(2, dtype=np.int8)
        mode[ep.mode[t]] = 1
        return {
            "communication_channel": ep.comm[t].copy(),
            "mode_id": mode,
            "other_agent_id": ep.other_agent_id.copy(),
            "previous_game_result": self._prev_result.copy(),
            "previous_game_reward": np.array([self._prev_reward], dtype=np.float32),
            "role_id": np.array([0, 1], dtype=np.int8),
            "stimulus": ep.stimulus[t].copy(),
        }

    def _info(self, t: int, decided: bool, correct: bool, decision_mode: int) -> dict:
        ep = self.episode
        r = int(ep.round_idx[t])
        round_id = np.zeros(self.config.n_rounds + 1, dtype=np.int8)
        if r >= 0:
            round_id[r] = 1
        return {
            "phase": PHASES[ep.mode[t]],
            "mode": self._modes[ep.shot[t] + 1],
            "round_idx": r,
            "round_id": round_id,
            "game_index": int(ep.game[t]),
            "target_decision": int(ep.target[t]),
            "speaker_latents": ep.speaker_latents[t].copy(),
            "listener_latents": ep.listener_latents[t].copy(),
            "decided": bool(decided),
            "correct": bool(correct),
            "decision_phase": PHASES[decision_mode] if decision_mode >= 0 else "",
        }
