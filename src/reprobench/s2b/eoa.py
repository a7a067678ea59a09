"""Ease-of-acquisition (EoA) of a speaker's language (S2B paper, Table 1, Algorithms 3-4; specs/s2b.md section 4.5):
a listener learns, for `epochs` epochs, a descriptive-only, object-centric referential game over one episode's
support (train-split) combinations, with the speaker's messages; the score is its accuracy on the episode's query
(test-split) combinations. Re-implemented from the spec and from reading ReferentialGym's LSTMObsListener and
`discriminative_st_gs_referential_game_loss` (the Regym ORG wrapper that logged `Training/ORG/TestAccuracy`).

    speaker = posdis_speaker(max_len=4)
    space = stimuli.sample_space(np.random.default_rng(0), n_dims=3, v_min=2, v_max=5, n_oc=4)
    ease_of_acquisition(space, speaker, EoAConfig(), seed=0)["accuracy"]       # one fresh listener
    ease_of_acquisition_batch([space] * 8, speaker, EoAConfig(), seeds=range(8))  # 8 fresh listeners trained at once
    ease_of_acquisition_sequence(spaces, speaker, EoAConfig(), seeds)          # one listener through the episodes

The listener's lifetime (DEVIATIONS S28). As run, the listener is never re-initialised: the ORG wrapper (Regym
10e54b2d org_wrapper.py) builds it and its Adam optimiser once (L692-707; ReferentialGym.make only at the first
training, L1264-1274) and, every `ORG_rg_training_period` = 2 finished episodes (L1212-1221), trains it 512 epochs on
the episode just finished and logs its test accuracy. `run_EoA_PS.sh` sets `ORG_rg_reset_listener_each_training=False`
(so L161-162 skip the reset); `run_lstm+org_marl.sh` sets it True, but the reset is a no-op: LSTMObsListener's
`reset_weights(whole=True)` (ReferentialGym 1e5fc9c2 rnn_obs_listener.py L202-208) only applies `layer_init`, which
returns at its first line (networks.py L73-74), and nothing touches the not-target logit, the BatchNorm statistics or
Adam's state. So the faithful EoA (`ease_of_acquisition_sequence(listener="persistent")`) is one listener, with one
Adam state, trained on the scored episodes in turn, each score taken after its own 512 epochs (run_EoA_PS.sh's run,
512 observations over 2 actors at about 75 steps an episode, made about 3 such trainings); the corrected one
(`listener="fresh"`) is a new listener per episode, the measure as spec 6.4 and its summary describe it: the score
of one episode's language, not dependent on how many episodes, and which, the listener learned before. A persistent
listener carries over both what transfers (the posdis language is the same in every episode) and what interferes
(each episode's SCS values sit elsewhere): measured at 512 epochs it is neither uniformly better nor worse.

The listener (per ReferentialGym, K = 0 descriptive). Encoder f: MLP N_dim -> 64 -> 64, ReLU after both layers
(ReferentialGym's FCBody puts a LeakyReLU after the first layer and nothing after the last, then BatchNorm; not
reproduced, DEVIATIONS S15).
Symbols: one-hot over vocab_size (64), times a 64-wide matrix without bias (an embedding). A 1-layer LSTM (64 units)
reads the message token by token, and after every token t the listener decides: score s_t = <f(x), h_t> for "the
message describes x" against a learned, message-independent not-target logit n (initialised to 1), i.e. logits
(s_t, n). Its answer is argmax (a tie answers "target") at the first EoS (token 0), or at the last position if the
message has none: ReferentialGym reads the decision at index min(#tokens before the first EoS, L - 1).

Loss "Impatient+Hinge". Hinge (Havrylov & Titov's, ReferentialGym's `havrylov_hinge_learning_signal`): for logits z and
right answer y, sum over the wrong answers w of max(0, 1 - z_y + z_w); with the two answers {target, not-target} it is
the binary hinge max(0, 1 - y (s_t - n)), y = +1 if the target was kept and -1 if it was replaced. Impatient: this
hinge is applied at EVERY position t = 0..L-1 of the padded message (EoS padding included) and averaged over the L
positions, so the listener is pushed to decide as early as the tokens allow; the batch loss is the mean over trials.

Protocol (the choices the spec leaves open):
- Messages: speaker_fn(latents (C, N_dim) int64) -> (C, L') tokens, called once on every combination of the space
  (a message depends on the latent combination only, so the speaker's object-centric index cannot matter); L' <=
  max_len, right-padded with EoS 0 to max_len; tokens in [0, vocab_size), 0 = EoS. The tokens are fed as given (no
  vocabulary permutation: the ORG oracle spoke in its own token space; a fixed bijection does not change learnability).
- A trial: a target stimulus (combination c, object-centric index j); with probability keep_target (0.5) the listener
  sees c through a uniformly random object-centric sample of c (j included), right answer "target"; otherwise it sees
  a stimulus drawn uniformly from the pool's stimuli of OTHER combinations (Algorithm 1's Dataset - TD(s0)), right
  answer "not target". Both as run: ReferentialGym (1e5fc9c2 datasets/dataset.py L193-205) draws the replacement
  with the target's class, i.e. its combination, excluded (`excepts_class`, object-centric); and whatever OC index
  the kept trial picks ('ratio-75': 75% another index of c, 25% the target's own, L273-289), the SCS dataset's
  `__getitem__` draws a fresh random OC sample of the combination at every fetch (S2B 013d16c
  symbolic_continuous_stimulus_dataset.py L461-462, L694-735), so the listener sees each of the O vectors of c with
  probability 1/O. (Ours before issue 25 excluded the index j: the same marginal, stratified within an epoch.)
- Pools: training targets and replacements are the support stimuli (all train-split combinations x O). Query targets
  are the query stimuli; their replacements come from train + test stimuli (`test_pool="all"`, ReferentialGym adds
  the train classes to the test pool), or from the query stimuli only (`test_pool="query"`).
- Epoch: one pass over the support stimuli (#train combinations x O) in a fresh random order, in batches of 32, the
  last one partial (a DataLoader without drop_last), one Adam step per batch; keep/replace and the listener's samples
  are drawn afresh for every trial of every epoch. 512 epochs, no early stop (accuracy_threshold 101 in the ORG).
- Score: after the last epoch, `test_repeats` passes (default 1, as the ORG's one test pass per epoch) over every query
  stimulus (#test combinations x O trials per pass, each with a fresh keep/replace draw): "accuracy". The same on the
  support stimuli (with the training pool): "train_accuracy".
- Omitted from ReferentialGym's listener: the two BatchNorm layers on the encoder output (not in the spec's
  description; their train/eval statistics would make the score depend on batch composition), dropout (0 in the ORG),
  the tau head (unused). Initialisation is PyTorch's default for Linear and LSTM layers, as ReferentialGym's (its
  layer_init is a no-op at 6961241e and 1e5fc9c2).

Vectorised: P listeners (different episodes and/or seeds, same N_dim) are P slices of one flat parameter tensor; every
layer is a batched matmul, the loss is the sum of the P listeners' own means (so their gradients do not mix), and a
hand-written Adam (torch.optim.Adam's update, eps 1e-16) steps only the listeners that have a batch at that step
(episodes differ in batches per epoch). All draws are made up front from each listener's own seed (numpy for the game,
a torch.Generator for the initialisation), so the epoch loop does not sync with the host, and a listener's draws do
not depend on the others in its batch. On a CPU these layers are tiny: torch.set_num_threads(1) runs them faster than
several threads, and about ten times faster when the cores are shared (measured on 2 cores).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from reprobench.s2b import stimuli
from reprobench.s2b.speaker import EOS, posdis_message

TEST_POOLS = ("all", "query")
LISTENERS = ("persistent", "fresh")  # the listener's lifetime over a sequence of episodes
LISTENER_OF_VARIANT = {"faithful": "persistent", "corrected": "fresh"}  # DEVIATIONS S28
TARGET, NOT_TARGET = 0, 1  # answer indices (ReferentialGym's: the stimulus, then the "none" answer K + 1)
BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults, which ReferentialGym's optimisation module keeps


@dataclass(frozen=True)
class EoAConfig:
    """The ORG wrapper's EoA listener and game (specs/s2b.md section 4.5). test_repeats and test_pool are this
    module's protocol choices (see the module docstring)."""

    epochs: int = 512
    batch_size: int = 32
    lr: float = 3e-4
    adam_eps: float = 1e-16
    encoder: tuple[int, ...] = (64, 64)
    embedding: int = 64
    hidden: int = 64
    vocab_size: int = 64
    max_len: int = 4
    keep_target: float = 0.5
    not_target_init: float = 1.0
    test_repeats: int = 1
    test_pool: str = "all"

    def __post_init__(self):
        for key in ("epochs", "batch_size", "embedding", "hidden", "max_len", "test_repeats"):
            stimuli.check_int(key, getattr(self, key), 1)
        stimuli.check_int("vocab_size", self.vocab_size, 2)
        if not isinstance(self.encoder, tuple) or not self.encoder:
            raise ValueError(f"encoder must be a non-empty tuple of layer widths, got {self.encoder!r}")
        for width in self.encoder:
            stimuli.check_int("encoder", width, 1)
        if self.encoder[-1] != self.hidden:
            raise ValueError(f"the encoder's last width ({self.encoder[-1]}) must equal hidden ({self.hidden}): the "
                             "decision score is <f(x), h_t>")
        for key in ("lr", "adam_eps"):
            value = getattr(self, key)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"{key} must be a positive number, got {value!r}")
        if not (isinstance(self.keep_target, int | float) and 0.0 <= self.keep_target <= 1.0):
            raise ValueError(f"keep_target must lie in [0, 1], got {self.keep_target!r}")
        if not (isinstance(self.not_target_init, int | float) and math.isfinite(self.not_target_init)):
            raise ValueError(f"not_target_init must be a finite number, got {self.not_target_init!r}")
        if self.test_pool not in TEST_POOLS:
            raise ValueError(f"test_pool must be one of {TEST_POOLS}, got {self.test_pool!r}")

    @classmethod
    def tiny(cls, epochs: int = 4, **overrides) -> EoAConfig:
        """Test-sized: few epochs and narrow layers (the protocol is unchanged)."""
        return cls(**{"epochs": epochs, "encoder": (16, 16), "embedding": 16, "hidden": 16, **overrides})

    def replace(self, **changes) -> EoAConfig:
        return dataclasses.replace(self, **changes)


# -- speakers ----------------------------------------------------------------------------------------------------------

def posdis_speaker(max_len: int = 4) -> Callable[[np.ndarray], np.ndarray]:
    """The rule-based posdis speaker (reprobench.s2b.speaker) as a speaker_fn: token i = class i + 1, then EoS."""
    return lambda latents: posdis_message(latents, max_len=max_len)


def constant_speaker(message: Sequence[int] = (1, 1, 1, 0)) -> Callable[[np.ndarray], np.ndarray]:
    """A speaker that says the same message whatever the stimulus: nothing to acquire, EoA at chance."""
    msg = np.asarray(message, dtype=np.int64)
    return lambda latents: np.broadcast_to(msg, (len(latents), len(msg))).copy()


def speaker_messages(speaker_fn: Callable[[np.ndarray], np.ndarray], latents: np.ndarray, config: EoAConfig
                     ) -> np.ndarray:
    """(C, max_len) int64: the speaker's message for each latent combination, EoS-padded; ValueError naming max_len or
    vocab_size when a message is too long or a token lies outside [0, vocab_size)."""
    out = np.asarray(speaker_fn(latents))
    if out.ndim != 2 or out.shape[0] != len(latents):
        raise ValueError(f"speaker_fn must return (n_combinations={len(latents)}, length) tokens, got {out.shape}")
    if out.size and not np.issubdtype(out.dtype, np.integer):
        if not np.all(np.isfinite(out)) or not np.all(out == np.round(out)):
            raise ValueError("speaker_fn must return integer tokens")
    if out.shape[1] > config.max_len:
        raise ValueError(f"speaker messages of length {out.shape[1]} exceed max_len={config.max_len}")
    out = out.astype(np.int64)
    if out.size and (out.min() < 0 or out.max() >= config.vocab_size):
        raise ValueError(f"speaker tokens must lie in [0, vocab_size={config.vocab_size}), got "
                         f"[{out.min()}, {out.max()}]")
    padded = np.full((len(latents), config.max_len), EOS, dtype=np.int64)
    padded[:, :out.shape[1]] = out
    return padded


# -- the listener ------------------------------------------------------------------------------------------------------

def param_shapes(n_dims: int, config: EoAConfig) -> dict[str, tuple[int, ...]]:
    """Each parameter's shape for one listener (in the flat vector's order). Weights are (in, out): x @ W."""
    shapes: dict[str, tuple[int, ...]] = {}
    width = n_dims
    for i, out in enumerate(config.encoder):
        shapes[f"enc{i}.w"], shapes[f"enc{i}.b"] = (width, out), (out,)
        width = out
    h = config.hidden
    shapes["embed"] = (config.vocab_size, config.embedding)
    shapes["lstm.w_ih"], shapes["lstm.w_hh"] = (config.embedding, 4 * h), (h, 4 * h)  # gates i, f, g, o
    shapes["lstm.b_ih"], shapes["lstm.b_hh"] = (4 * h,), (4 * h,)
    shapes["not_target"] = (1,)
    return shapes


def unflatten(flat: Tensor, n_dims: int, config: EoAConfig) -> dict[str, Tensor]:
    """Views (P, *shape) of the flat (P, n_params) parameters: writing a view writes the listener."""
    out, at = {}, 0
    for name, shape in param_shapes(n_dims, config).items():
        size = math.prod(shape)
        out[name] = flat[:, at:at + size].view(flat.shape[0], *shape)
        at += size
    return out


def init_listeners(n_dims: int, config: EoAConfig, seeds: Sequence[int]) -> Tensor:
    """(P, n_params) float32 fresh parameters on the CPU, listener p from torch.Generator seeded with seeds[p]:
    PyTorch's default initialisation (Linear: U(+-1/sqrt(fan_in)) for weight and bias; LSTM: U(+-1/sqrt(hidden))),
    the not-target logit at not_target_init (ReferentialGym: ones)."""
    shapes = param_shapes(n_dims, config)
    rows = []
    for seed in seeds:
        g = torch.Generator().manual_seed(int(seed))
        parts = []
        for name, shape in shapes.items():
            if name == "not_target":
                parts.append(torch.full(shape, float(config.not_target_init)))
                continue
            if name.startswith("lstm"):
                bound = 1 / math.sqrt(config.hidden)
            elif name == "embed":
                bound = 1 / math.sqrt(config.vocab_size)  # nn.Linear(vocab_size, embedding, bias=False)
            else:
                fan_in = shapes[name.replace(".b", ".w")][0]
                bound = 1 / math.sqrt(fan_in)
            parts.append((torch.rand(shape, generator=g) * 2 - 1).mul_(bound).reshape(-1))
        rows.append(torch.cat([p.reshape(-1) for p in parts]))
    return torch.stack(rows)


def listener_logits(params: dict[str, Tensor], obs: Tensor, tokens: Tensor, config: EoAConfig) -> Tensor:
    """Per-position decision logits (P, B, L, 2): [..., 0] = <f(x), h_t> (target), [..., 1] = the not-target logit.

    params: unflatten's views; obs (P, B, N) float; tokens (P, B, L) int64 in [0, vocab_size).
    """
    p, b, length = tokens.shape
    feat = obs
    for i in range(len(config.encoder)):
        feat = torch.relu(torch.baddbmm(params[f"enc{i}.b"].unsqueeze(1), feat, params[f"enc{i}.w"]))
    one_hot = torch.nn.functional.one_hot(tokens.reshape(p, b * length), config.vocab_size).to(obs.dtype)
    emb = torch.bmm(one_hot, params["embed"])  # (P, B L, E): ReferentialGym's Linear on one-hot symbols
    x_gates = torch.baddbmm((params["lstm.b_ih"] + params["lstm.b_hh"]).unsqueeze(1), emb,
                            params["lstm.w_ih"]).view(p, b, length, -1)
    h = obs.new_zeros(p, b, config.hidden)
    c = torch.zeros_like(h)
    scores = []
    for t in range(length):
        gates = x_gates[:, :, t] + torch.bmm(h, params["lstm.w_hh"])
        i, f, g, o = gates.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        scores.append((feat * h).sum(-1))
    score = torch.stack(scores, dim=-1)  # (P, B, L)
    not_target = params["not_target"].view(p, 1, 1).expand(p, b, length)
    return torch.stack([score, not_target], dim=-1)


def impatient_hinge(logits: Tensor, answers: Tensor) -> Tensor:
    """Per-trial loss (...,): the hinge max(0, 1 - z_answer + z_other) at every position, averaged over positions.

    logits (..., L, 2); answers (...,) in {TARGET, NOT_TARGET}.
    """
    right = logits.gather(-1, answers[..., None, None].expand(*logits.shape[:-1], 1)).squeeze(-1)
    wrong = logits.gather(-1, (1 - answers)[..., None, None].expand(*logits.shape[:-1], 1)).squeeze(-1)
    return torch.relu(1 - right + wrong).mean(-1)


def decision_index(tokens: Tensor) -> Tensor:
    """(...,) the position whose decision is the answer: the first EoS, or the last position if there is none."""
    length = tokens.shape[-1]
    before = (tokens != EOS).long().cumprod(-1).sum(-1)  # tokens before the first EoS
    return before.clamp(max=length - 1)


def decide(logits: Tensor, tokens: Tensor) -> Tensor:
    """(...,) the answer, TARGET or NOT_TARGET, at decision_index (argmax; a tie answers TARGET)."""
    at = logits.gather(-2, decision_index(tokens)[..., None, None].expand(*logits.shape[:-2], 1, 2)).squeeze(-2)
    return (at[..., 1] > at[..., 0]).long()


# -- the game ----------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Game:
    """One listener's episode: stimuli (M, N) float32 for every stimulus index, messages (C, L) per combination, the
    support and query stimulus indices, the query trials' replacement pool."""

    n_oc: int
    stimuli: np.ndarray
    messages: np.ndarray
    support: np.ndarray
    query: np.ndarray
    query_pool: np.ndarray


def _space_of(space_or_episode) -> stimuli.SymbolicSpace:
    space = getattr(space_or_episode, "space", space_or_episode)  # an env.Episode carries its space
    if not isinstance(space, stimuli.SymbolicSpace):
        raise ValueError(f"expected a SymbolicSpace or an episode with .space, got {type(space_or_episode).__name__}")
    return space


def _game(space: stimuli.SymbolicSpace, speaker_fn, config: EoAConfig) -> _Game:
    d, o = space.n_values, space.n_oc
    support, query = stimuli.split(d, o)
    if len(query) == 0:
        raise ValueError(f"n_values {d.tolist()} has no query (test-split) combination to score")
    every = np.arange(space.n_stimuli, dtype=np.int64)
    pool = every if config.test_pool == "all" else query
    for name, p in (("support", support), ("test_pool", pool)):
        if len(p) <= o:
            raise ValueError(f"the {name} stimuli of n_values {d.tolist()} hold one combination: no stimulus of "
                             "another combination can replace the target")
    return _Game(n_oc=o, stimuli=stimuli.observe(space, stimuli.coordinates(every, d, o), every % o),
                 messages=speaker_messages(speaker_fn, stimuli.combinations(d), config),
                 support=support, query=query, query_pool=pool)


def _trials(rng: np.random.Generator, targets: np.ndarray, pool: np.ndarray, n_oc: int, keep_target: float
            ) -> tuple[np.ndarray, np.ndarray]:
    """For target stimulus indices (any shape): the listener's stimulus and the right answer. Kept: a uniformly
    random OC sample of the target's combination, the target's own included (as run: the SCS dataset draws a fresh OC
    sample at every fetch, so 'hard', 'ratio-75' and 'extra-simple' all show this; module docstring); replaced:
    uniform over the pool's stimuli of other combinations. pool is sorted and holds whole combinations, so the
    target's O stimuli are one block that the draw skips."""
    kept = rng.random(targets.shape) < keep_target
    oc = rng.integers(n_oc, size=targets.shape)
    combo = targets // n_oc
    start = np.searchsorted(pool, combo * n_oc)
    r = rng.integers(len(pool) - n_oc, size=targets.shape)
    other = pool[r + n_oc * (r >= start)]
    listener = np.where(kept, combo * n_oc + oc, other)
    return listener, np.where(kept, TARGET, NOT_TARGET)


def _schedule(rng: np.random.Generator, game: _Game, config: EoAConfig, n_steps: int) -> dict[str, np.ndarray]:
    """Every training trial of every epoch, laid out (epochs, n_steps, batch): the message's combination, the
    listener's stimulus, the answer, and whether the slot holds a trial (the last batch of an epoch is partial, and
    listeners with fewer support stimuli have fewer steps)."""
    e, n, b = config.epochs, len(game.support), config.batch_size
    targets = rng.permuted(np.broadcast_to(game.support, (e, n)), axis=1)
    listener, answer = _trials(rng, targets, game.support, game.n_oc, config.keep_target)
    slots = n_steps * b
    out = {"combo": np.zeros((e, slots), np.int64), "listener": np.zeros((e, slots), np.int64),
           "answer": np.zeros((e, slots), np.int64), "valid": np.zeros((e, slots), bool)}
    out["combo"][:, :n], out["listener"][:, :n] = targets // game.n_oc, listener
    out["answer"][:, :n], out["valid"][:, :n] = answer, True
    return {k: v.reshape(e, n_steps, b) for k, v in out.items()}


def _evaluation(rng: np.random.Generator, game: _Game, config: EoAConfig, phase: str) -> dict[str, np.ndarray]:
    """test_repeats passes over the phase's stimuli, in index order: (combo, listener, answer) (T,) each."""
    targets = np.tile(game.query if phase == "query" else game.support, config.test_repeats)
    pool = game.query_pool if phase == "query" else game.support
    listener, answer = _trials(rng, targets, pool, game.n_oc, config.keep_target)
    return {"combo": targets // game.n_oc, "listener": listener, "answer": answer}


def _stack(rows: list[np.ndarray], fill=0) -> np.ndarray:
    """Right-pad arrays of equal rank along axis -1 (or axis 0 for 2-D tables) and stack them."""
    axis = 0 if rows[0].ndim == 2 else -1
    size = max(r.shape[axis] for r in rows)
    out = []
    for r in rows:
        pad = [(0, 0)] * r.ndim
        pad[axis] = (0, size - r.shape[axis])
        out.append(np.pad(r, pad, constant_values=fill))
    return np.stack(out)


# -- training ----------------------------------------------------------------------------------------------------------

def _adam_step(flat: Tensor, grad: Tensor, state: dict[str, Tensor], active: Tensor, config: EoAConfig) -> None:
    """torch.optim.Adam's update on the listeners where `active` (P,) is set; the others are left untouched, moments
    and step count included (a zero gradient would still move them through the moments)."""
    b1, b2 = BETAS
    a = active[:, None]
    state["step"] += active.to(state["step"].dtype)
    state["m"] = torch.where(a, state["m"].mul(b1).add_(grad, alpha=1 - b1), state["m"])
    state["v"] = torch.where(a, state["v"].mul(b2).addcmul_(grad, grad, value=1 - b2), state["v"])
    step = state["step"].clamp(min=1)[:, None]
    bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step
    update = (state["m"] / bc1) / ((state["v"].sqrt() / bc2.sqrt()) + config.adam_eps) * config.lr
    flat.sub_(torch.where(a, update, torch.zeros_like(update)))


def _correct(flat: Tensor, n_dims: int, config: EoAConfig, table: Tensor, messages: Tensor, trials: dict[str, Tensor]
             ) -> Tensor:
    """(P,) int64: how many of each listener's valid trials it answers right."""
    params = unflatten(flat, n_dims, config)
    rows = torch.arange(flat.shape[0], device=flat.device)[:, None]
    tokens = messages[rows, trials["combo"]]
    logits = listener_logits(params, table[rows, trials["listener"]], tokens, config)
    return ((decide(logits, tokens) == trials["answer"]) & trials["valid"]).sum(1)


def _games(spaces: Sequence, speaker_fn, config: EoAConfig, seeds: Sequence[int]) -> tuple[list[_Game], int]:
    """Each space's game (with its speaker's messages) and the common N_dim; ValueError on mismatched inputs."""
    spaces = [_space_of(s) for s in spaces]
    if not spaces or len(spaces) != len(seeds):
        raise ValueError(f"need one seed per space, got {len(spaces)} spaces and {len(seeds)} seeds")
    speakers = list(speaker_fn) if isinstance(speaker_fn, Sequence) else [speaker_fn] * len(spaces)
    if len(speakers) != len(spaces):
        raise ValueError(f"need one speaker_fn per space, got {len(speakers)} for {len(spaces)} spaces")
    n_dims = spaces[0].n_dims
    if any(s.n_dims != n_dims for s in spaces):
        raise ValueError("every space of a batch must have the same n_dims (the encoder's input width)")
    return [_game(s, f, config) for s, f in zip(spaces, speakers)], n_dims


def _adam_state(flat: Tensor) -> dict[str, Tensor]:
    """A fresh Adam state (moments and step count) for the listeners `flat` (P, n_params)."""
    return {"m": torch.zeros_like(flat), "v": torch.zeros_like(flat),
            "step": torch.zeros(flat.shape[0], device=flat.device)}


def _acquire(games: list[_Game], n_dims: int, rngs: list[np.random.Generator], config: EoAConfig, flat: Tensor,
             state: dict[str, Tensor]) -> list[dict]:
    """Train the listeners `flat` (P, n_params, requires_grad; updated in place, as is their Adam `state`) for
    config.epochs epochs, listener p on games[p] with its trials drawn from rngs[p], then score them (see
    ease_of_acquisition_batch for the returned keys)."""
    dev = flat.device
    steps = [math.ceil(len(g.support) / config.batch_size) for g in games]
    n_steps = max(steps)
    schedules = [_schedule(r, g, config, n_steps) for r, g in zip(rngs, games)]
    evals = {phase: [_evaluation(r, g, config, phase) for r, g in zip(rngs, games)] for phase in ("query", "support")}

    table = torch.from_numpy(_stack([g.stimuli for g in games])).to(dev)  # (P, M, N)
    messages = torch.from_numpy(_stack([g.messages for g in games])).to(dev)  # (P, C, L)
    # (epochs, steps, P, batch): one slice per Adam step, already on the device
    sched = {k: torch.from_numpy(np.stack([s[k] for s in schedules], axis=2)).to(dev) for k in schedules[0]}
    weight = sched["valid"].float() / sched["valid"].sum(-1, keepdim=True).clamp(min=1)  # each listener's batch mean
    active = sched["valid"].any(-1)  # (epochs, steps, P)
    rows = torch.arange(len(games), device=dev)[:, None]
    last_loss = torch.zeros(len(games), device=dev)
    for e in range(config.epochs):
        for s in range(n_steps):
            combo, answer = sched["combo"][e, s], sched["answer"][e, s]
            tokens = messages[rows, combo]
            logits = listener_logits(unflatten(flat, n_dims, config), table[rows, sched["listener"][e, s]], tokens,
                                     config)
            per_listener = (impatient_hinge(logits, answer) * weight[e, s]).sum(-1)  # (P,)
            (grad,) = torch.autograd.grad(per_listener.sum(), flat)
            with torch.no_grad():
                _adam_step(flat, grad, state, active[e, s], config)
                if e == config.epochs - 1:
                    last_loss += per_listener.detach()

    scores = {}
    with torch.no_grad():
        for phase, trials in evals.items():
            t = {k: torch.from_numpy(_stack([tr[k] for tr in trials])).to(dev) for k in ("combo", "listener", "answer")}
            t["valid"] = torch.from_numpy(_stack([np.ones(len(tr["combo"]), bool) for tr in trials], False)).to(dev)
            counts = _correct(flat.detach(), n_dims, config, table, messages, t).cpu().numpy()
            scores[phase] = counts / np.array([len(tr["combo"]) for tr in trials])
    last_loss = (last_loss / torch.tensor(steps, device=dev, dtype=last_loss.dtype)).cpu().numpy()
    return [{"accuracy": float(scores["query"][p]), "train_accuracy": float(scores["support"][p]),
             "train_loss": float(last_loss[p]), "n_query_trials": len(evals["query"][p]["combo"]),
             "n_support_trials": len(evals["support"][p]["combo"]), "n_support_stimuli": len(games[p].support),
             "steps": steps[p] * config.epochs, "epochs": config.epochs} for p in range(len(games))]


def ease_of_acquisition_batch(spaces: Sequence, speaker_fn, config: EoAConfig, seeds: Sequence[int],
                              device: str | torch.device = "cpu") -> list[dict]:
    """EoA of P fresh listeners trained together, listener p on spaces[p] (a SymbolicSpace or an episode with .space)
    with seeds[p]; speaker_fn is one speaker for all or a sequence of P. Returns one dict per listener:
    accuracy (query trials), train_accuracy (support trials), train_loss (mean impatient hinge over the last epoch),
    n_query_trials, n_support_trials, n_support_stimuli, steps (Adam steps taken), epochs."""
    seeds = [int(s) for s in seeds]
    games, n_dims = _games(spaces, speaker_fn, config, seeds)
    flat = init_listeners(n_dims, config, seeds).to(torch.device(device)).requires_grad_(True)
    return _acquire(games, n_dims, [np.random.default_rng(seed) for seed in seeds], config, flat, _adam_state(flat))


def ease_of_acquisition_sequence(spaces: Sequence, speaker_fn, config: EoAConfig, seeds: Sequence[int],
                                 listener: str = "persistent", device: str | torch.device = "cpu") -> list[dict]:
    """EoA scored on each of a sequence of episodes (spaces, speaker_fn and seeds as in ease_of_acquisition_batch).

    listener 'persistent' (faithful, as run: module docstring): ONE listener, initialised from seeds[0], trains
    config.epochs epochs on spaces[0] and is scored on its query, then goes on (its weights and its Adam moments and
    step count) to spaces[1], and so on; episode k's trials are drawn from seeds[k], so episode 0 scores exactly as
    ease_of_acquisition(spaces[0], seed=seeds[0]). 'fresh' (corrected): a new listener per episode, exactly
    ease_of_acquisition_batch. Each dict also holds prior_episodes: how many episodes the listener trained on
    before this one."""
    if listener not in LISTENERS:
        raise ValueError(f"listener must be one of {LISTENERS}, got {listener!r}")
    seeds = [int(s) for s in seeds]
    if listener == "fresh":
        return [r | {"prior_episodes": 0} for r in ease_of_acquisition_batch(spaces, speaker_fn, config, seeds, device)]
    games, n_dims = _games(spaces, speaker_fn, config, seeds)
    flat = init_listeners(n_dims, config, seeds[:1]).to(torch.device(device)).requires_grad_(True)
    state = _adam_state(flat)  # one optimiser for the whole sequence, as the ORG wrapper's (built once)
    return [_acquire([g], n_dims, [np.random.default_rng(seed)], config, flat, state)[0] | {"prior_episodes": k}
            for k, (g, seed) in enumerate(zip(games, seeds))]


def ease_of_acquisition(space_or_episode, speaker_fn, config: EoAConfig | None = None, seed: int = 0,
                        device: str | torch.device = "cpu") -> dict:
    """EoA of one fresh listener (see ease_of_acquisition_batch for the returned keys); deterministic for a seed on
    the CPU."""
    return ease_of_acquisition_batch([space_or_episode], speaker_fn, config or EoAConfig(), [seed], device)[0]
