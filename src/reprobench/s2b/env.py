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
(R + 1) #RGs steps (S2B at 013d16c; for the code Figure 6 ran with, see the terminal observation below).

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
int64, and for the action just taken `decided` (this step scored a decision), `correct`, and the phase and mode
the decision was scored in (its reward) and counts in (its accuracy), `decision_phase` ("support"/"query") and
`decision_mode` ("train<k>"/"test"), both "" when nothing was scored. They are the decided game's own, except with
S2B's late phase switch (variant below). ZSCT accuracy = mean of `correct` over steps with decision_mode == "test"
(equivalently decision_phase == "query").

Faithful/corrected and other options (specs/s2b.md sections 6.3-6.4):
- variant: "faithful" (default): the speaker sees a uniformly random object-centric (OC) sample of the target, so a
  listener that keeps the target sees the speaker's very vector with probability 1/O (section 1.3); "corrected":
  the speaker sees the target's own OC sample, so for O > 1 the listener never sees the speaker's vector.
  Without listener feedback (Figure 6), "faithful" also keeps S2B's late phase switch (DEVIATIONS S21; S2B
  `013d16c` L383-398 run before L519-547, `1b287de` L357-367 before L487-504): the modes move on when the last
  round of a mode's last game is shown, before its decision is scored, so that decision is scored and counted in
  the next mode: the last one of support pass k in pass k + 1, the last support one in the query phase (-2 if
  wrong, in the ZSCT accuracy), and the last query one in support pass 0 (0 if wrong, in train0; the modes wrap).
  "corrected" (and every game with feedback, where S2B scores at the feedback step, before the switch) scores each
  decision in its own game's phase and mode.
- descriptive_target_ratio: None gives the reference's 1 / (1 + K + descriptive), P(keep the target), so all
  K + 2 answers are equiprobable; pass 1 / (K + 1) for runs of the 2022-12-08 .. 2023-01-12 window (section 2.8).
- query_all: False (faithful) queries the component-focused sample of the test split; True queries every test
  stimulus in index order (section 6.4, "query coverage").

Choices where the spec is silent:
- Randomness: one numpy Generator per environment (gymnasium's np_random, seeded by reset(seed=...); the first
  unseeded reset uses the constructor's `seed`, 1337 as in the reference). Each reset takes the generator's next raw
  64-bit output as the episode's key (`episode_keys`), and every random number of the episode, games included, is a
  function of that key (reprobench.s2b.stimuli, 'many episodes at once': SplitMix64 on separate streams); steps draw
  nothing. `generate_episodes` draws many episodes at once with array operations, and an episode does not depend on
  the batch it is drawn in; `generate_episode` is the batch of one. The vector environment draws its sub-environments'
  keys from their own generators, in the same order, which is what makes the two step for step identical.
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
  and message, with round_idx -1 and previous_game_* updated, in the query phase. S2B is not silent here: at
  013d16c it shows the last game's stimulus again at round 0 with the modes wrapped to train0 (mode_id [1, 0]);
  the trainer never stores or counts this observation (its next step is an autoreset). The S2B code Figure 6 ran
  with (d1f9f14, 2021-09, before 86ebb8a) did not end the episode there at all: it went on through `nbr_shots` more
  support passes showing the last query game again, and ended on the next test mode's round 0 (not reproduced).
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
from reprobench.s2b.speaker import EOS

VARIANTS = stimuli.VARIANTS
N_AGENT_ID = 10
SUPPORT, QUERY = 0, 1
PHASES = ("support", "query")
REWARD_SUCCESS, REWARD_FAIL_SUPPORT, REWARD_FAIL_QUERY = 1.0, 0.0, -2.0
SAMPLING_RE = re.compile(r"component-focused-(\d+)shots?")


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

    @property
    def late_switch(self) -> bool:
        """S2B's late phase switch (module docstring, DEVIATIONS S21): faithful and without listener feedback."""
        return self.variant == "faithful" and not self.listener_feedback


def make_config(nbr_communication_rounds=1, vocab_size=6, max_sentence_length=3, descriptive=False, nbr_latents=3,
                min_nbr_values_per_latent=2, max_nbr_values_per_latent=5, nbr_object_centric_samples=1,
                nbr_distractors=1, observability="full", distractor_sampling="uniform",
                descriptive_target_ratio=None, object_centric=None, nbr_shots=1, sampling_strategy=None,
                use_communication_channel_permutations=True, allow_listener_query=False,
                provide_listener_feedback=False, variant="faithful", query_all=False, speaker="posdis") -> GameConfig:
    """Validate the reference's keyword arguments (section 2.1 defaults) into a GameConfig; errors name the argument."""
    n_rounds = stimuli.check_int("nbr_communication_rounds", nbr_communication_rounds, 1)
    vocab = stimuli.check_int("vocab_size", vocab_size, 1)
    length = stimuli.check_int("max_sentence_length", max_sentence_length, 1)
    n_latents = stimuli.check_int("nbr_latents", nbr_latents, 2)  # one latent has no query split (2 test values needed)
    v_min = stimuli.check_int("min_nbr_values_per_latent", min_nbr_values_per_latent, 2)
    v_max = stimuli.check_int("max_nbr_values_per_latent", max_nbr_values_per_latent, 2)
    if v_min > v_max:
        raise ValueError(f"min_nbr_values_per_latent ({v_min}) must not exceed max_nbr_values_per_latent ({v_max})")
    n_oc = stimuli.check_int("nbr_object_centric_samples", nbr_object_centric_samples, 1)
    k = stimuli.check_int("nbr_distractors", nbr_distractors, 0)
    shots_passes = stimuli.check_int("nbr_shots", nbr_shots, 1)
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


def _utterances(cfg: GameConfig, latents: np.ndarray, vocabulary: np.ndarray, episode: np.ndarray) -> np.ndarray:
    """(G, R + 2, L) int32 speaker tokens per game, in the listener's token space (vocabulary (B, V + 1) of each
    game's episode (G,)), for rounds 0..R and, last, the feedback step; posdis repeats round R - 1 at round R and says
    all EoS at feedback; tokens after the first EoS become EoS (the reference's channel regularisation; posdis
    messages are regular already)."""
    g, r, length = len(latents), cfg.n_rounds, cfg.max_sentence_length
    out = np.zeros((g, r + 2, length), dtype=np.int32)
    if cfg.speaker is None:  # token class + 1, mapped straight to the listener's tokens (EoS stays EoS)
        if (latents + 1 >= cfg.vocab_size).any():
            raise ValueError(f"vocab_size {cfg.vocab_size} is too small for latent class {int(latents.max())}")
        token = vocabulary.reshape(-1).take(episode[:, None] * vocabulary.shape[1] + latents + 1)  # (G, N)
        if r == 1:  # the whole message at rounds 0 and 1
            out[:, :2, :latents.shape[1]] = token[:, None, :]
        else:  # one attribute per round, round R repeating round R - 1
            out[:, :r, 0] = token[:, :r]
            out[:, r, 0] = token[:, r - 1]
        return out
    else:
        for slot, round_idx in enumerate([*range(r + 1), -1]):
            msg = np.asarray(cfg.speaker(latents.copy(), round_idx))
            if msg.shape != (g, length) or not np.issubdtype(msg.dtype, np.integer) or (msg < 0).any() or (
                    msg > cfg.vocab_size).any():
                raise ValueError(f"speaker returned {msg.shape} {msg.dtype} tokens; expected ({g}, {length}) "
                                 f"integers in [0, {cfg.vocab_size}]")
            out[:, slot] = msg[:, :length]
        out[np.cumsum(out == EOS, axis=-1) > 0] = EOS
    return vocabulary.reshape(-1)[episode[:, None, None] * vocabulary.shape[1] + out].astype(np.int32)


# streams of an episode's random numbers (reprobench.s2b.stimuli: the space and the sampling use 0..31)
S_VOCAB_SPEAKER, S_VOCAB_LISTENER, S_AGENT_ID = 32, 33, 34
S_SPEAKER_OC, S_LISTENER_OC, S_DISTRACTOR, S_DISTRACTOR_OC, S_REMOVED, S_OTHER, S_OTHER_OC, S_ORDER = range(35, 43)


def episode_keys(rng: np.random.Generator, n: int = 1) -> np.ndarray:
    """The keys of the next n episodes of a generator: (n,) uint64, its next n raw 64-bit outputs. Drawing n at once
    gives the same keys as n draws of one, so a vector environment can draw ahead of a single one."""
    return np.asarray(rng.bit_generator.random_raw(n), dtype=np.uint64).reshape(n)


def packed_columns(cfg: GameConfig) -> dict[str, slice | int]:
    """Where each timeline field sits in the packed rows of an EpisodeBatch. int32 `ints`: comm (L), round_idx, game,
    target, shot, speaker_latents (N), listener_latents ((K + 1) N, slot-major); int8 `small`: mode_id (2, one-hot),
    round_id (R + 1, one-hot, zeros at feedback), decision, mode."""
    length, n, r = cfg.max_sentence_length, cfg.n_latents, cfg.n_rounds
    return {"comm": slice(0, length), "round_idx": length, "game": length + 1, "target": length + 2,
            "shot": length + 3, "speaker_latents": slice(length + 4, length + 4 + n),
            "listener_latents": slice(length + 4 + n, length + 4 + n * (cfg.n_distractors + 2)),
            "n_ints": length + 4 + n * (cfg.n_distractors + 2),
            "mode_id": slice(0, 2), "round_id": slice(2, 3 + r), "decision": 3 + r, "mode": 4 + r, "n_small": 5 + r}


@dataclass(frozen=True)
class EpisodeBatch:
    """Episodes drawn together (generate_episodes), their timelines concatenated and packed: the observations of
    episode b are rows offsets[b]:offsets[b + 1] of ints (int32), small (int8) and stimulus (float32), with the
    columns of packed_columns(config); the Episode timeline fields are properties that unpack them. Per episode:
    other_agent_id (B, 10), vocabulary (B, V + 1), the spaces, and the support / query indices (B, n) padded with -1
    with their (B,) lengths."""

    config: GameConfig
    ints: np.ndarray
    small: np.ndarray
    stimulus: np.ndarray
    offsets: np.ndarray
    other_agent_id: np.ndarray
    vocabulary: np.ndarray
    spaces: stimuli.SymbolicSpaces
    support: np.ndarray
    n_support: np.ndarray
    query: np.ndarray
    n_query: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_steps(self) -> np.ndarray:
        return np.diff(self.offsets) - 1

    def field(self, name: str, rows=slice(None)) -> np.ndarray:
        """Timeline field `name` (an Episode field) of the given rows, in the Episode's dtype."""
        if name == "stimulus":
            return self.stimulus[rows].copy()
        col = packed_columns(self.config)[name]
        if name in ("decision", "mode"):
            return self.small[rows, col].astype(bool if name == "decision" else np.int8)
        out = self.ints[rows, col].astype(np.int64)
        return out.reshape(len(out), self.config.n_distractors + 1, -1) if name == "listener_latents" else out

    def episode(self, b: int) -> Episode:
        """Episode b on its own."""
        rows = slice(int(self.offsets[b]), int(self.offsets[b + 1]))
        return Episode(**{key: self.field(key, rows) for key in _TIMELINE},
                       other_agent_id=self.other_agent_id[b].copy(), vocabulary=self.vocabulary[b].copy(),
                       space=self.spaces.space(b), support=self.support[b, :self.n_support[b]].copy(),
                       query=self.query[b, :self.n_query[b]].copy())


_TIMELINE = ("stimulus", "comm", "mode", "shot", "round_idx", "game", "target", "decision", "speaker_latents",
             "listener_latents")


def _games(keys: np.ndarray, cfg: GameConfig, spaces: stimuli.SymbolicSpaces, episode: np.ndarray,
           game: np.ndarray, targets: np.ndarray, support_game: np.ndarray) -> dict[str, np.ndarray]:
    """Every RG of a batch of episodes at once (section 2.4), as M games: game `game` (M,) of episode `episode`
    (M,), whose target is the stimulus-centric index `targets` (M,), a support game (the train classes are its pool)
    or a query game (all classes), per support_game (M,). Game g of episode b draws from b's key with index g.
    Returns per game: speaker (M, K+1, N) float32 vectors (target first), listener (M, K+1, N) (shuffled),
    speaker_latents (M, N), set_latents and listener_latents (M, K+1, N) int64, target (M,) decisions."""
    m = len(targets)
    k, o, d = cfg.n_distractors, cfg.n_oc, spaces.n_values
    width, n = spaces.oc_samples.shape[2], d.shape[1]
    uid, tables = stimuli.class_tables(d, width)
    c = tables["coords"].shape[1]
    key = keys[episode]
    t_class = targets // o
    own = targets % o
    spk_j = stimuli.counter_integers(key, S_SPEAKER_OC, game, o) if cfg.variant == "faithful" and o > 1 else own
    if o == 1:
        lst_j = own
    else:  # uniform over the other O - 1 OC samples of the target's class
        lst_j = stimuli.counter_integers(key, S_LISTENER_OC, game, o - 1)
        lst_j = lst_j + (lst_j >= own)
    train_row = uid[episode] * 2 * c  # the support half's row of the (U, 2, C) tables
    pool = np.where(support_game, tables["size"][uid, 0][episode], np.prod(d, axis=1)[episode])  # classes in the phase
    t_rank = np.where(support_game, tables["rank"].reshape(-1)[train_row + t_class], t_class)  # the target's position
    split_flat = tables["split"].reshape(-1)

    def pool_class(position):  # the class at a position of the game's pool, position (M, ...)
        extra = (1,) * (position.ndim - 1)
        return np.where(support_game.reshape(m, *extra), split_flat[train_row.reshape(m, *extra) + position],
                        position)

    classes = np.empty((m, k + 1), dtype=np.int64)
    oc = np.empty((m, k + 1), dtype=np.int64)
    classes[:, 0], oc[:, 0] = t_class, spk_j
    if k > 0:  # K distinct other classes of the phase, uniform: the r-th position not taken yet, K times
        if (pool - 1 < k).any():
            raise ValueError(f"nbr_distractors={k} needs at least {k + 1} classes in a phase, an episode has "
                             f"{int(pool.min())}")
        taken = t_rank[:, None]
        for i in range(k):
            pos = stimuli.counter_integers(key, S_DISTRACTOR, game * k + i, np.maximum(pool - 1 - i, 1))
            for e in np.sort(taken, axis=1).T:
                pos = pos + (pos >= e)
            taken = np.concatenate([taken, pos[:, None]], axis=1)
        classes[:, 1:] = pool_class(taken[:, 1:])
        oc[:, 1:] = stimuli.counter_integers(key[:, None], S_DISTRACTOR_OC, game[:, None] * k + np.arange(k), o)
    lst_classes, lst_oc = classes.copy(), oc.copy()
    if cfg.object_centric:
        lst_oc[:, 0] = lst_j
    removed = np.zeros(m, dtype=bool)
    if cfg.descriptive:  # the listener's target replaced by a uniformly random other class of the phase
        removed = stimuli.counter_uniform(key, S_REMOVED, game) >= cfg.descriptive_target_ratio
        if (removed & (pool < 2)).any():
            raise ValueError("a descriptive game needs at least 2 classes in a phase to remove the target")
        other = stimuli.counter_integers(key, S_OTHER, game, np.maximum(pool - 1, 1))
        other = np.minimum(other + (other >= t_rank), pool - 1)
        lst_classes[:, 0] = np.where(removed, pool_class(other), lst_classes[:, 0])
        if o > 1:
            lst_oc[:, 0] = np.where(removed, stimuli.counter_integers(key, S_OTHER_OC, game, o), lst_oc[:, 0])
        else:
            lst_oc[:, 0] = 0
    if k > 0:  # listener slot s shows set element order[s]
        order = np.argsort(stimuli.counter_uniform(key[:, None], S_ORDER, game[:, None] * (k + 1) + np.arange(k + 1)),
                           axis=1, kind="stable")
        lst_classes = np.take_along_axis(lst_classes, order, axis=1)
        lst_oc = np.take_along_axis(lst_oc, order, axis=1)
        target = np.where(removed, k + 1, np.argmax(order == 0, axis=1))
    else:
        target = np.where(removed, k + 1, 0)

    coords_flat = tables["coords"].reshape(-1, n)
    class_row = (uid[episode] * c)[:, None]
    flat = spaces.oc_samples.reshape(-1)
    base = ((np.arange(len(d))[:, None] * n + np.arange(n)) * width).take(episode, axis=0)[:, None, :]  # (M, 1, N)

    def vectors(cls, j):
        coords = coords_flat.take(class_row + cls, axis=0)  # (M, K+1, N); x_{i, v, j} at (base + v) O + j
        return flat.take((base + coords) * o + j[..., None]).astype(np.float32), coords

    spk_vec, set_lat = vectors(classes, oc)
    lst_vec, lst_lat = vectors(lst_classes, lst_oc)
    return {"speaker": spk_vec, "listener": lst_vec, "speaker_latents": set_lat[:, 0], "set_latents": set_lat,
            "listener_latents": lst_lat, "target": target.astype(np.int64)}


@dataclass(frozen=True)
class Phases:
    """The support and query stimulus-centric indices of a batch of episodes, in presentation order (one support
    pass): (B, n) int64 arrays padded with -1, and their (B,) lengths."""

    support: np.ndarray
    n_support: np.ndarray
    query: np.ndarray
    n_query: np.ndarray

    def take(self, rows) -> Phases:
        """The episodes at `rows`, trimmed to their longest."""
        n_support, n_query = self.n_support.take(rows), self.n_query.take(rows)
        return Phases(self.support.take(rows, axis=0)[:, :max(int(n_support.max()), 1)], n_support,
                      self.query.take(rows, axis=0)[:, :max(int(n_query.max()), 1)], n_query)

    @staticmethod
    def concatenate(parts: list[Phases]) -> Phases:
        """The episodes of several batches, one after the other."""
        def cat(name):
            arrays = [getattr(p, name) for p in parts]
            width = max(a.shape[1] for a in arrays)
            return np.concatenate([np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=-1) for a in arrays])
        return Phases(cat("support"), np.concatenate([p.n_support for p in parts]), cat("query"),
                      np.concatenate([p.n_query for p in parts]))


def sample_phases(keys, cfg: GameConfig, n_values: np.ndarray | None = None) -> Phases:
    """The first step of generate_episodes alone: each episode's support and query stimuli (section 1.5 sampling,
    or every stimulus of the split, per the config). n_values: the episodes' d(i), when known."""
    keys = stimuli._keys(keys)
    o, width = cfg.n_oc, cfg.v_max
    d = stimuli.sample_n_values(keys, cfg.n_latents, cfg.v_min, cfg.v_max) if n_values is None else n_values
    if cfg.shots is None:
        support, n_support = stimuli.split_batch(d, o, "support", width)
        query, n_query = stimuli.split_batch(d, o, "query", width)
    elif cfg.query_all:
        support, n_support = stimuli.component_focused_sampling_batch(keys, d, o, cfg.shots, "support", width)
        query, n_query = stimuli.split_batch(d, o, "query", width)
    else:
        (support, n_support), (query, n_query) = stimuli.component_focused_sampling_batch(
            keys, d, o, cfg.shots, "both", width)
    return Phases(support, n_support, query, n_query)


def generate_episodes(keys, cfg: GameConfig, phases: Phases | None = None) -> EpisodeBatch:
    """Draw whole episodes (section 2.7), one per key, with array operations over the batch: space, support and
    query sampling (or the given `phases`, sample_phases of the same keys), the two vocabulary bijections, the other
    agent's id, the games. Every random number of an episode is a function of its key alone
    (reprobench.s2b.stimuli, 'many episodes at once'), so an episode does not depend on the batch it is drawn in."""
    keys = stimuli._keys(keys)
    b, o = len(keys), cfg.n_oc
    spaces = stimuli.sample_spaces(keys, n_dims=cfg.n_latents, v_min=cfg.v_min, v_max=cfg.v_max, n_oc=o)
    d = spaces.n_values
    if phases is None:
        phases = sample_phases(keys, cfg, d)
    support, n_support, query, n_query = phases.support, phases.n_support, phases.query, phases.n_query
    v = cfg.vocab_size
    speaker_map = np.tile(np.arange(v + 1), (b, 1))
    listener_map = speaker_map.copy()
    if cfg.use_permutations:  # uniform bijections: the order of uniform keys
        speaker_map[:, 1:] = 1 + np.argsort(stimuli.counter_uniform(keys[:, None], S_VOCAB_SPEAKER, np.arange(v)),
                                            axis=1, kind="stable")  # decodes the speaker's token into the channel's
        listener_map[:, 1:] = 1 + np.argsort(stimuli.counter_uniform(keys[:, None], S_VOCAB_LISTENER, np.arange(v)),
                                             axis=1, kind="stable")  # encodes a channel token into the listener's
    vocabulary = np.take_along_axis(listener_map, speaker_map, axis=1)
    other_agent_id = stimuli.counter_uniform(keys[:, None], S_AGENT_ID, np.arange(N_AGENT_ID)).astype(np.float32)

    # the games of all episodes in a row: nbr_shots passes over the support targets, then the query targets
    n_sup = n_support * cfg.nbr_shots
    n_games = n_sup + n_query
    first = np.concatenate([[0], np.cumsum(n_games)])  # episode b's games: first[b]:first[b + 1]
    episode = np.repeat(np.arange(b), n_games)
    game = np.arange(first[-1]) - first[episode]
    support_game = game < n_sup[episode]
    targets = np.where(support_game,
                       support.reshape(-1)[episode * support.shape[1] + game % np.maximum(n_support, 1)[episode]],
                       query.reshape(-1)[episode * query.shape[1] + np.maximum(game - n_sup[episode], 0)])
    games = _games(keys, cfg, spaces, episode, game, targets, support_game)
    mode = np.where(support_game, SUPPORT, QUERY).astype(np.int8)
    shot = np.where(support_game, game // np.maximum(n_support, 1)[episode], -1)
    utter = _utterances(cfg, games["speaker_latents"], vocabulary, episode)  # (M, R + 2, L), listener's tokens

    # The timelines, game by game: observation per g + kk of an episode shows its game g at kk = 0..R (rounds) and,
    # with feedback, R + 1 (feedback), so each field is written as (M, per, ...) blocks of the packed rows; without
    # feedback a terminal observation follows each episode's last game.
    r, per, fb = cfg.n_rounds, cfg.obs_per_game, cfg.listener_feedback
    col = packed_columns(cfg)
    m = len(game)
    # the columns constant over a game, then the ones that change with kk
    row = np.empty((m, col["n_ints"]), dtype=np.int32)
    row[:, col["game"]] = game
    row[:, col["target"]] = games["target"]
    row[:, col["shot"]] = shot
    row[:, col["speaker_latents"]] = games["speaker_latents"]
    row[:, col["listener_latents"]] = games["listener_latents"].reshape(m, -1)
    ints = np.empty((m, per, col["n_ints"]), dtype=np.int32)
    ints[:] = row[:, None]
    kk = np.arange(per)
    ints[..., col["round_idx"]] = np.where(kk <= r, kk, -1)
    # comm: the speaker's utterance on the previous observation (utter slots 0..R rounds, R + 1 feedback): round 0
    # shows the previous game's last utterance, or nothing before an episode's first game
    comm = ints[..., col["comm"]]
    comm[1:, 0] = utter[:-1, r + 1 if fb else r]
    comm[first[:-1], 0] = EOS
    comm[:, 1:] = utter[:, :per - 1]
    stimulus = np.empty((m, per, cfg.stimulus_dim), dtype=np.float32)
    stimulus[:, :r + 1] = games["listener"].reshape(m, 1, -1)
    if fb:  # feedback: the speaker's stimuli (the true target first)
        ints[:, r + 1, col["listener_latents"]] = games["set_latents"].reshape(m, -1)
        stimulus[:, r + 1] = games["speaker"].reshape(m, -1)
    template = np.zeros((2, per, col["n_small"]), dtype=np.int8)  # by mode and kk
    template[:, :, col["mode_id"]] = np.eye(2, dtype=np.int8)[:, None]
    template[:, :r + 1, col["round_id"]] = np.eye(r + 1, dtype=np.int8)
    template[:, r, col["decision"]] = 1
    template[:, :, col["mode"]] = np.arange(2)[:, None]
    small = template.take(mode, axis=0)
    ints, small, stimulus = (x.reshape(m * per, -1) for x in (ints, small, stimulus))
    offsets = per * first
    if not fb:  # a terminal observation after each episode's last round R: round_idx -1, the utterance of round R
        offsets = offsets + np.arange(b + 1)
        terminal = np.zeros(offsets[-1], dtype=bool)
        terminal[offsets[1:] - 1] = True
        last = per * first[1:] - 1  # the last round R row of each episode
        packed = []
        for x in (ints, small, stimulus):
            out = np.empty((offsets[-1], x.shape[1]), dtype=x.dtype)
            out[~terminal] = x
            out[terminal] = x[last]
            packed.append(out)
        ints, small, stimulus = packed
        ints[terminal, col["comm"]] = utter[first[1:] - 1, r]
        ints[terminal, col["round_idx"]] = -1
        small[terminal, col["round_id"]] = 0
        small[terminal, col["decision"]] = 0
    return EpisodeBatch(config=cfg, ints=ints, small=small, stimulus=stimulus, offsets=offsets,
                        other_agent_id=other_agent_id, vocabulary=vocabulary, spaces=spaces, support=support,
                        n_support=n_support, query=query, n_query=n_query)


def generate_episode(rng: np.random.Generator, cfg: GameConfig) -> Episode:
    """Draw one whole episode (section 2.7): the next key of `rng` (episode_keys), then generate_episodes."""
    return generate_episodes(episode_keys(rng), cfg).episode(0)


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


def scored_blocks(cfg: GameConfig, mode: np.ndarray, shot: np.ndarray, terminal: np.ndarray):
    """(mode, shot) of the phase and support pass (-1: query) in which a decision on each row is scored and counted,
    for the rows of whole episodes (mode, shot, terminal: (rows,) arrays; terminal marks each episode's last row).
    A row's own game's, or with cfg.late_switch the next row's (without feedback a decision row is followed by the
    next game's round 0, whose mode S2B has already switched to), and (support, pass 0) for an episode's last
    decision, as S2B's modes wrap to train0 after the query phase."""
    if not cfg.late_switch:
        return mode, shot
    wrap = np.append(terminal[1:], True)  # the next row is a terminal one (or there is none)
    return (np.where(wrap, SUPPORT, np.append(mode[1:], SUPPORT)).astype(mode.dtype),
            np.where(wrap, 0, np.append(shot[1:], 0)).astype(shot.dtype))


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
            stimuli.check_int("seed", seed, 0)
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
        self.episode = ep = generate_episode(self.np_random, self.config)
        terminal = np.arange(ep.n_steps + 1) == ep.n_steps
        self._scored_mode, self._scored_shot = scored_blocks(self.config, ep.mode, ep.shot, terminal)
        self._t = 0
        self._prev_reward = 0.0
        self._prev_result = np.zeros(2, dtype=np.int8)
        return self._observation(0), self._info(0, False, False, -1, -1)

    def step(self, action):
        if self.episode is None:
            raise RuntimeError("call reset() before step()")
        ep, t = self.episode, self._t
        if t >= ep.n_steps:
            raise RuntimeError("the episode has ended; call reset()")
        decision = self._decision(action)
        decided = bool(ep.decision[t])
        correct = decided and decision == int(ep.target[t])
        reward, phase, shot = 0.0, -1, -1
        if decided:  # scored in its game's phase, or with S2B's late switch the next one's
            phase, shot = int(self._scored_mode[t]), int(self._scored_shot[t])
            reward = float(reward_of(correct, phase))
            self._prev_reward = reward
            self._prev_result = np.array([0, 1] if correct else [1, 0], dtype=np.int8)
        self._t = t + 1
        terminated = self._t == ep.n_steps
        return (self._observation(self._t), reward, terminated, False,
                self._info(self._t, decided, correct, phase, shot))

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

    def _info(self, t: int, decided: bool, correct: bool, scored_phase: int, scored_shot: int) -> dict:
        """The info of observation t; scored_phase (-1: nothing scored) and scored_shot: where the action just
        taken was scored (scored_blocks)."""
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
            "decision_phase": PHASES[scored_phase] if scored_phase >= 0 else "",
            "decision_mode": self._modes[scored_shot + 1] if scored_phase >= 0 else "",
        }
