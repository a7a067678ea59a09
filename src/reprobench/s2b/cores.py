"""The R2D2 agents' networks for the S2B listener (specs/s2b.md section 4.3): encoder -> recurrent core -> dueling head.

Every core has one interface, so the learner, the actors and the reconstruction loss never look inside it:

    h, state = core(x, state)                 one step: x (B, F) -> h (B, out_dim); state a dict of (B, ...) tensors
    state = core.initial_state(batch)         all zeros (an episode's start; the learner resets nothing inside a
                                              stored sequence, which never crosses an episode's end)
    h, state, feats = core.unroll(x, state, features)   x (B, T, F) -> h (B, T, out_dim); feats (B, T, recon_dim)
    core.recon_features(h, state)             what the auxiliary reconstruction reads (section 4.4), (B, recon_dim)

Cores (`CORES`):
- "lstm": Table 2's old Regym `MLP-LSTM-RNN2` (section 4.3 A). Encoder: phi = FCBody(stimulus, [512, 256, 128]);
  concat [phi; previous reward; previous action one-hot A; channel one-hot L (V + 1); round_id R + 1; role_id 2;
  mode_id 2; previous_game_result 2; previous_game_reward 1; legal-action mask A] (1197 for A = 519) -> FCBody
  [512, 256, 256]; core: a 2-layer LSTM (128, 128), output concat [MLP features; LSTM out] (384, the residual);
  reconstruction reads both layers' h (256). (The paper's text and Table 5 say 256, 128: `lstm=(256, 128)`.)
- "archi_lstm": Table 4's Archi LSTM (B). Encoder: stimulus -> 64 -> 32 and channel one-hot -> 64 -> 32 (ReLU on
  both layers), concat [both; the flags; previous reward; previous action one-hot] (245 for A = 171); core: one LSTM
  512; the head reads [h; mask]; reconstruction reads h.
- "esbn": Table 4's ESBN (C) on the Archi encoder's z_t: controller LSTM 256 on [z_t; previous read (257)], gate and
  key from its h (Linear), read = sigmoid(g) sum_n softmax(M_v z_t)_n [M_k[n]; sigmoid(Linear(M_v[n] . z_t))] (zero at
  the first step), then write (k_t, z_t); output LSTM 512 on [z_t; h_ctrl; read] (758) -> Linear 256; the head reads
  [256; 758; mask] (1185 for A = 171); reconstruction reads the key memory's last 3 slots, zero-padded (3 x 256).
- "dcem": Table 4's dual-coding episodic memory (D): memories of extended obs [obs-enc 32; flags 10] and extended comm
  (42 each), written first (Archi's pipeline writes ObsMemory and CommMemory before the read heads run, so a read can
  return the step's own entry); a comm-keyed query (42 -> 256 ReLU -> 3 x 42 linear) reads the obs memory with the
  comm memory as keys and vice versa; per head, each with its own one-head self-attention module (Archi's
  read_heads_module.py L47): cosine to the keys, top-6, weights 1 / (1e-8 + max(1 - cos, 0)) normalised, the weighted
  values through the self-attention, summed over the 6; output LSTM 512 on [its previous h; 126; 126; z_t] (1009 for
  A = 171) -> FC 512 (ReLU) -> 256 (linear: the config's non_linearities ['ReLU', None]); the head reads [256; mask];
  reconstruction reads the 1009 input.
- "dnc": Figure 6's (and the recall task's) full DNC (E): 128 slots x 32, 2 read heads, 1 write head, dense
  addressing; controller LSTM (128, 128) on [phi-encoder features; previous reads]; output Linear([controller out;
  reads] -> 128) (Regym's two layers, vt + output_fn(reads), as one). Encoder: the "lstm" encoder without its critic
  MLP. Reconstruction: `dnc_recon` "hidden" (faithful: the 2021-10 code read the controller's h, 2 x 128) or "memory"
  (the paper's text and later code: the last 3 memory slots, 3 x 32).

Faithful/corrected (section 6.3 item 7): `fc_activation` "all" (faithful, and the paper's text: the 2021-22 Regym
FCBody repeated its first non-linearity, so ReLU after every Linear, the last included) or "head" (Regym since
`da2a0c87`, 2023-04: ReLU after the first Linear only, what the old script gives on `develop` today). It applies to
the old Regym bodies ("lstm", "dnc"); Archi's FC modules repeat their first non-linearity too, so the encoders' 2
layers have ReLU, but an explicit None (the DCEM's query and output FCs, the ESBN's Linear layers) leaves a layer
linear.

Faithful/corrected memories (issue 25): `empty_slots` "eligible" (faithful: Archi's memories keep a permanent zero slot
0, key_value_memory_module.py L89-116 and memory_module.py L79-101 at 02959468; the ESBN's softmax runs over it, so its
similarity 0 damps every read from the second step on; the DCEM pads its memory with zeros up to the top-k and its
zero entries compete for the top 6 with cosine 0, read_heads_module.py L99-115, no padding mask at L191) or "masked"
(only written slots are read; the DCEM's attention masks the top-k entries it could not fill). `dnc_interface` "regym"
(faithful, differentiable_neural_computer.py at Regym 2ad02503: tanh on the read keys, write key and write vector
L107, 117, 134; softplus strengths L110, 120; the previous usage floored, u <- 5e-3 + (1 - 5e-3) u, L182) or "paper"
(Graves et al. 2016: raw keys and write vector, 1 + softplus strengths, no floor).

Initialisation as the originals ran it (`initialise`): Regym's cores ("lstm", "dnc") Xavier-uniform Linear weights and
zero biases (networks/utils.py layer_init), orthogonal LSTM weights and zero biases (layer_init_lstm), the DNC's
interface and the controller's part of its output layer orthogonal x 1e-3 (differentiable_neural_computer.py L73-80,
L495-502; the read vectors' part, L509-516, passes w_scale 1e-3 without init_type 'ortho', which layer_init ignores:
Xavier-uniform); Archi's cores kaiming-normal (fan_out, ReLU gain) x sqrt(2) FC weights with U(-0.08, 0.08) biases
(Archi modules/utils.py layer_init, fully_connected_network_module.py L108), kaiming-normal LSTM cells (x 1) with
U(-0.08, 0.08) biases (recurrent_network_module.py L59), PyTorch's own self-attention initialisation; the dueling
head is Regym's DuelingLayer in both (Xavier-uniform, zero biases).

Actions (`ActionLayout`, section 2.10): "combined" (faithful) is the reference's DiscreteCombinedActionWrapper,
(K + 2) (1 + sum_p V^p) + 1 actions, decision = a // #sentences, the last action a no-op; "decision" (compact) keeps
only the decision: K + 2 + 1 actions, the no-op last. The listener's legal actions: the no-op only, except at the
decision step (round_idx == R) where every action but the no-op is legal.

Choices where the spec is silent: `other_agent_id` is not an input (the spec's input lists leave it out); before an
episode's first action the previous action is none (a zero one-hot) and the previous reward 0; ESBN and DCEM memories
are rings of `memory_capacity` slots (512, longer than any episode of the paper's settings; the reference's memories
grow without bound); DNC usage allocation uses a stable sort (Regym's topk leaves the order of equal usages open);
the DCEM's top 6 takes the lowest slot (the earlier entry) among equal cosines and orders its picks by cosine, then
slot (`top_k_lowest_index`: Archi's torch topk leaves both to the device, and CUDA and the CPU break ties differently;
an entry written twice, the same message or stimulus again, puts equal keys in two slots).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

CORES = ("lstm", "archi_lstm", "esbn", "dcem", "dnc")  # the papers' cores
ARCHI_CORES = ("archi_lstm", "esbn", "dcem")
USER = "user"  # NetConfig.user_core's class on the Archi encoder (reprobench.s2b.user_core)
FC_ACTIVATIONS = ("all", "head")
ACTION_KINDS = ("combined", "decision")
DNC_RECON = ("hidden", "memory")
EMPTY_SLOTS = ("eligible", "masked")
DNC_INTERFACES = ("regym", "paper")
ARCHI_BIAS = 0.08  # Archi's layer_init: biases U(-0.08, 0.08)
USAGE_FLOOR = 5e-3  # Regym's DNC: u <- 5e-3 + (1 - 5e-3) u before each usage update
FLAG_KEYS = ("round_id", "role_id", "mode_id", "previous_game_result", "previous_game_reward")
INPUT_KEYS = ("stimulus", "comm", "prev_reward", *FLAG_KEYS, "prev_action", "decision")
_NEG = -2.0  # below any cosine similarity: marks empty memory slots for top-k


class ActionLayout:
    """The listener's discrete action space (see the module docstring). `legal` (2, A) bool: row 0 at non-decision
    steps, row 1 at the decision step."""

    def __init__(self, kind: str, n_decisions: int, vocab_size: int, max_len: int):
        if kind not in ACTION_KINDS:
            raise ValueError(f"action kind must be one of {ACTION_KINDS}, got {kind!r}")
        self.kind, self.n_decisions = kind, int(n_decisions)
        self.vocab_size, self.max_len = int(vocab_size), int(max_len)
        self.n_sentences = 1 + sum(vocab_size ** p for p in range(1, max_len + 1)) if kind == "combined" else 1
        self.n_actions = self.n_decisions * self.n_sentences + 1
        self.noop = self.n_actions - 1
        self.legal = np.zeros((2, self.n_actions), dtype=bool)
        self.legal[0, self.noop] = True
        self.legal[1, :self.noop] = True

    def decisions(self, actions: np.ndarray) -> np.ndarray:
        """The environment's decision of each action (the no-op is decision 0, as the reference's wrapper)."""
        a = np.asarray(actions, dtype=np.int64)
        return np.where(a == self.noop, 0, a // self.n_sentences)

    def messages(self, actions: np.ndarray) -> np.ndarray:
        """(n, L) int64: the sentence of each action (a % #sentences; the no-op's is empty), as the reference's wrapper
        enumerates them: sentence 0 is all EoS, then the V^p sentences of length p = 1..L in turn, little-endian (the
        first token is the least significant digit), tokens 1..V, EoS (0) after them."""
        if self.kind != "combined":
            raise ValueError("only the 'combined' action layout holds sentences")
        a = np.asarray(actions, dtype=np.int64)
        s = np.where(a == self.noop, 0, a % self.n_sentences)
        out = np.zeros((len(s), self.max_len), dtype=np.int64)
        start = 1
        for p in range(1, self.max_len + 1):
            k = s - start
            inside = (k >= 0) & (k < self.vocab_size ** p)
            for j in range(p):
                out[:, j] = np.where(inside, 1 + (k // self.vocab_size ** j) % self.vocab_size, out[:, j])
            start += self.vocab_size ** p
        return out

    def random_actions(self, rng: np.random.Generator, decision: np.ndarray) -> np.ndarray:
        """A uniformly random legal action per actor (one draw per actor, whatever its step)."""
        draw = rng.integers(self.noop, size=len(decision))
        return np.where(np.asarray(decision, dtype=bool), draw, self.noop)


@dataclass(frozen=True)
class InputDims:
    """Sizes of the listener's inputs: stimulus (K+1) N_dim, channel L tokens in 0..V, round_id R + 1, A actions."""

    stimulus: int
    vocab_size: int
    max_len: int
    round_dim: int
    n_actions: int

    @property
    def comm(self) -> int:
        return self.max_len * (self.vocab_size + 1)

    @property
    def flags(self) -> int:
        """previous reward 1 + round_id + role 2 + mode 2 + previous result 2 + previous game reward 1."""
        return 1 + self.round_dim + 2 + 2 + 2 + 1


@dataclass(frozen=True)
class NetConfig:
    """Network sizes; the defaults are the reference's (section 4.3). `tiny_net(core)` gives test-sized ones.
    fc_activation, dnc_recon, empty_slots and dnc_interface choose between the behaviours the module docstring
    describes; each default is the one the original ran."""

    core: str = "lstm"
    fc_activation: str = "all"
    phi: tuple[int, ...] = (512, 256, 128)
    critic: tuple[int, ...] = (512, 256, 256)
    lstm: tuple[int, ...] = (128, 128)
    archi_obs: tuple[int, ...] = (64, 32)
    archi_comm: tuple[int, ...] = (64, 32)
    archi_lstm: int = 512
    esbn_controller: int = 256
    esbn_key: int = 256
    esbn_lstm: int = 512
    esbn_out: int = 256
    memory_capacity: int = 512
    recon_slots: int = 3
    dcem_query: int = 256
    dcem_heads: int = 3
    dcem_topk: int = 6
    dcem_lstm: int = 512
    dcem_fc: tuple[int, ...] = (512, 256)
    dnc_controller: tuple[int, ...] = (128, 128)
    dnc_slots: int = 128
    dnc_width: int = 32
    dnc_reads: int = 2
    dnc_out: int = 128
    dnc_recon: str = "hidden"
    empty_slots: str = "eligible"
    dnc_interface: str = "regym"
    user_core: str | None = None  # core "user": the user's class 'package.module:Class' (reprobench.s2b.user_core)

    def __post_init__(self):
        if self.core not in (*CORES, USER):
            raise ValueError(f"core must be one of {CORES} or {USER!r}, got {self.core!r}")
        if (self.core == USER) != (self.user_core is not None):
            raise ValueError(f"user_core names the class of core 'user' (and only of it): core {self.core!r}, "
                             f"user_core {self.user_core!r}")
        if self.fc_activation not in FC_ACTIVATIONS:
            raise ValueError(f"fc_activation must be one of {FC_ACTIVATIONS}, got {self.fc_activation!r}")
        for name, allowed in (("dnc_recon", DNC_RECON), ("empty_slots", EMPTY_SLOTS),
                              ("dnc_interface", DNC_INTERFACES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("memory_capacity", "recon_slots", "dcem_heads", "dcem_topk", "dnc_slots", "dnc_width",
                     "dnc_reads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")


def tiny_net(core: str = "lstm", **overrides) -> NetConfig:
    """Test-sized widths (every layer kept, every width divided down) for `core`."""
    sizes = dict(core=core, phi=(32, 16, 16), critic=(32, 16, 16), lstm=(16, 16), archi_obs=(16, 8),
                 archi_comm=(16, 8), archi_lstm=32, esbn_controller=16, esbn_key=16, esbn_lstm=32, esbn_out=16,
                 memory_capacity=64, dcem_query=16, dcem_lstm=32, dcem_fc=(32, 16), dnc_controller=(16, 16),
                 dnc_slots=16, dnc_width=8, dnc_out=16)
    sizes.update(overrides)
    return NetConfig(**sizes)


class FCBody(nn.Module):
    """Regym's / Archi's fully connected body: Linear layers of `sizes`; ReLU after every layer ("all") or after the
    first only ("head", Regym since 2023-04)."""

    def __init__(self, in_dim: int, sizes, activation: str = "all"):
        super().__init__()
        if activation not in FC_ACTIVATIONS:
            raise ValueError(f"activation must be one of {FC_ACTIVATIONS}, got {activation!r}")
        dims = [in_dim, *sizes]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.relu = [activation == "all" or i == 0 for i in range(len(sizes))]
        self.out_dim = dims[-1]

    def forward(self, x: Tensor) -> Tensor:
        for layer, relu in zip(self.layers, self.relu):
            x = layer(x)
            if relu:
                x = F.relu(x)
        return x


# Inputs are cast to the encoder's own dtype (float32 in training; float64 where a check runs the network in it).
def _flags(inp: dict[str, Tensor], dtype: torch.dtype) -> Tensor:
    return torch.cat([inp["prev_reward"].to(dtype), *(inp[k].to(dtype) for k in FLAG_KEYS)], dim=-1)


def _one_hot(index: Tensor, n: int, dtype: torch.dtype) -> Tensor:
    """One-hot of (...,) indices, all zeros where index < 0."""
    return F.one_hot(index.clamp_min(0), n).to(dtype) * (index >= 0).unsqueeze(-1).to(dtype)


def comm_one_hot(comm: Tensor, vocab_size: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """The multi-binary channel (MultiBinaryCommunicationChannelWrapper): (..., L) tokens -> (..., L (V + 1))."""
    return F.one_hot(comm.long(), vocab_size + 1).to(dtype).flatten(-2)


def _partner(inp: dict[str, Tensor], dims: InputDims, on: bool, dtype: torch.dtype) -> list[Tensor]:
    """SAD's input (reprobench.s2b.marl): the partner's previous greedy action, one-hot (zeros: none); [] when off."""
    return [_one_hot(inp["partner_action"].long(), dims.n_actions, dtype)] if on else []


class RegymEncoder(nn.Module):
    """Old Regym torso ("lstm", "dnc"): phi(stimulus) and every other input, concatenated, then (for "lstm") the
    critic FCBody. Input: flat (N, ...) inputs and the legal mask (N, A)."""

    def __init__(self, dims: InputDims, phi, critic, activation: str, partner: bool = False):
        super().__init__()
        self.dims, self.partner = dims, partner
        self.phi = FCBody(dims.stimulus, phi, activation)
        cat_dim = self.phi.out_dim + dims.flags + dims.comm + (3 if partner else 2) * dims.n_actions
        self.critic = FCBody(cat_dim, critic, activation) if critic else None
        self.out_dim = self.critic.out_dim if critic else cat_dim

    def forward(self, inp: dict[str, Tensor], mask: Tensor) -> Tensor:
        d, f = self.dims, self.phi.layers[0].weight.dtype
        x = torch.cat([self.phi(inp["stimulus"].to(f)), inp["prev_reward"].to(f),
                       _one_hot(inp["prev_action"].long(), d.n_actions, f), comm_one_hot(inp["comm"], d.vocab_size, f),
                       *(inp[k].to(f) for k in FLAG_KEYS), mask.to(f), *_partner(inp, d, self.partner, f)], dim=-1)
        return self.critic(x) if self.critic is not None else x


class ArchiEncoder(nn.Module):
    """Archi torso ("archi_lstm", "esbn", "dcem"): z = [obs-enc; comm-enc; flags; previous action one-hot], in this
    order (the DCEM core slices it)."""

    def __init__(self, dims: InputDims, obs_sizes, comm_sizes, partner: bool = False):
        super().__init__()
        self.dims, self.partner = dims, partner
        self.obs = FCBody(dims.stimulus, obs_sizes, "all")
        self.comm = FCBody(dims.comm, comm_sizes, "all")
        self.obs_dim, self.comm_dim = self.obs.out_dim, self.comm.out_dim
        self.out_dim = self.obs_dim + self.comm_dim + dims.flags + (2 if partner else 1) * dims.n_actions

    def forward(self, inp: dict[str, Tensor], mask: Tensor) -> Tensor:
        d, f = self.dims, self.obs.layers[0].weight.dtype
        return torch.cat([self.obs(inp["stimulus"].to(f)), self.comm(comm_one_hot(inp["comm"], d.vocab_size, f)),
                          _flags(inp, f), _one_hot(inp["prev_action"].long(), d.n_actions, f),
                          *_partner(inp, d, self.partner, f)], dim=-1)


class Core(nn.Module):
    """The recurrent core interface (module docstring). Subclasses set out_dim and recon_dim and define forward,
    _zeros (name -> (shape, dtype)) and recon_features; unroll loops over time unless overridden."""

    out_dim: int
    recon_dim: int
    own_init = False  # True for a user's core (user_core.UserCore): initialise leaves its modules as built

    def state_spec(self) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        raise NotImplementedError

    def initial_state(self, batch: int, device=None) -> dict[str, Tensor]:
        return {k: torch.zeros((batch, *shape), dtype=dtype, device=device)
                for k, (shape, dtype) in self.state_spec().items()}

    def recon_features(self, h: Tensor, state: dict[str, Tensor]) -> Tensor:
        raise NotImplementedError

    def unroll(self, x: Tensor, state: dict[str, Tensor], features: bool = False):
        hs, feats = [], []
        for t in range(x.shape[1]):
            h, state = self(x[:, t], state)
            hs.append(h)
            if features:
                feats.append(self.recon_features(h, state))
        return torch.stack(hs, 1), state, (torch.stack(feats, 1) if features else None)


class LSTMCore(Core):
    """Stacked LSTMs (one nn.LSTM per layer, so layers may differ in size); out = [x; h_last] when residual."""

    def __init__(self, in_dim: int, sizes, residual: bool):
        super().__init__()
        dims = [in_dim, *sizes]
        self.layers = nn.ModuleList(nn.LSTM(a, b, batch_first=True) for a, b in zip(dims[:-1], dims[1:]))
        self.sizes, self.residual = tuple(sizes), residual
        self.out_dim = (in_dim if residual else 0) + sizes[-1]
        self.recon_dim = sum(sizes)

    def state_spec(self):
        spec = {}
        for i, s in enumerate(self.sizes):
            spec[f"h{i}"] = ((s,), torch.float32)
            spec[f"c{i}"] = ((s,), torch.float32)
        return spec

    def unroll(self, x: Tensor, state: dict[str, Tensor], features: bool = False):
        y, new, outs = x, {}, []
        for i, layer in enumerate(self.layers):
            y, (h, c) = layer(y, (state[f"h{i}"].unsqueeze(0).contiguous(), state[f"c{i}"].unsqueeze(0).contiguous()))
            new[f"h{i}"], new[f"c{i}"] = h[0], c[0]
            outs.append(y)
        out = torch.cat([x, y], dim=-1) if self.residual else y
        return out, new, (torch.cat(outs, dim=-1) if features else None)

    def forward(self, x: Tensor, state: dict[str, Tensor]):
        out, new, _ = self.unroll(x.unsqueeze(1), state)
        return out[:, 0], new

    def recon_features(self, h: Tensor, state: dict[str, Tensor]) -> Tensor:
        return torch.cat([state[f"h{i}"] for i in range(len(self.sizes))], dim=-1)


def _ring_write(memory: Tensor, count: Tensor, value: Tensor) -> Tensor:
    """memory (B, C, D) with value (B, D) written at slot count % C (no host sync)."""
    slot = F.one_hot(count % memory.shape[1], memory.shape[1]).bool().unsqueeze(-1)
    return torch.where(slot, value.unsqueeze(1), memory)


def _valid_slots(count: Tensor, capacity: int) -> Tensor:
    return torch.arange(capacity, device=count.device)[None, :] < count.clamp(max=capacity)[:, None]


def top_k_lowest_index(scores: Tensor, k: int, method: str | None = None) -> tuple[Tensor, Tensor]:
    """The k largest of `scores` (..., C) along the last dimension and their indices, as torch.sort(scores,
    descending=True, stable=True) gives them first: among equal scores the lowest index wins, and the picks come in
    order of decreasing score, then increasing index. torch.topk leaves both open, and CUDA and the CPU break ties
    differently. `method` "sort" (the default off the CPU: about 2x topk's time on an H100 for 64 x 3 rows of 518) or
    "threshold" (the CPU's: topk's k-th value, every score above it and the lowest-indexed ties at it, then a sort of
    the k picks; about 4x topk's time there, where the full sort takes 30x). Both give the same tensors, with no host
    sync."""
    method = method or ("threshold" if scores.device.type == "cpu" else "sort")
    if method not in ("sort", "threshold"):
        raise ValueError(f"method must be 'sort' or 'threshold', got {method!r}")
    if method == "sort":
        top, idx = torch.sort(scores, dim=-1, descending=True, stable=True)
        return top[..., :k], idx[..., :k]
    kth = scores.topk(k, dim=-1).values[..., -1:]  # the k-th largest value, whatever the tie order
    above, tied = scores > kth, scores == kth
    picked = above | (tied & (tied.cumsum(-1) <= k - above.sum(-1, keepdim=True)))
    rank = torch.arange(scores.shape[-1], 0, -1, device=scores.device)  # C .. 1: unique, the lowest index highest
    idx = torch.where(picked, rank, 0).topk(k, dim=-1).indices  # exactly k picks, in increasing index
    top, order = torch.sort(scores.gather(-1, idx), dim=-1, descending=True, stable=True)
    return top, idx.gather(-1, order)


def _last_slots(memory: Tensor, count: Tensor, n: int) -> Tensor:
    """The n most recently written slots of a ring memory, oldest first, zeros where fewer were written: (B, n D)."""
    cap = memory.shape[1]
    idx = count[:, None] - n + torch.arange(n, device=count.device)[None, :]  # (B, n)
    ok = (idx >= 0) & (idx >= count[:, None] - cap)
    rows = torch.gather(memory, 1, (idx % cap).unsqueeze(-1).expand(-1, -1, memory.shape[2]))
    return (rows * ok.unsqueeze(-1).to(rows.dtype)).flatten(1)


class ESBNCore(Core):
    """The Emergent Symbol Binding Network core of Archi (section 4.3 C); see the module docstring."""

    def __init__(self, in_dim: int, controller: int, key: int, lstm: int, out: int, capacity: int,
                 recon_slots: int, empty_slots: str = "eligible"):
        super().__init__()
        self.in_dim, self.ctrl, self.key_dim, self.lstm_dim, self.cap = in_dim, controller, key, lstm, capacity
        self.recon_slots, self.zero_slot = recon_slots, empty_slots == "eligible"
        self.controller = nn.LSTMCell(in_dim + key + 1, controller)
        self.gate = nn.Linear(controller, 1)
        self.key = nn.Linear(controller, key)
        self.confidence = nn.Linear(1, 1)
        self.cat_dim = in_dim + controller + key + 1
        self.out_lstm = nn.LSTMCell(self.cat_dim, lstm)
        self.out = nn.Linear(lstm, out)
        self.out_dim = out + self.cat_dim
        self.recon_dim = recon_slots * key

    def state_spec(self):
        f = torch.float32
        return {"ctrl_h": ((self.ctrl,), f), "ctrl_c": ((self.ctrl,), f), "read": ((self.key_dim + 1,), f),
                "out_h": ((self.lstm_dim,), f), "out_c": ((self.lstm_dim,), f),
                "mem_k": ((self.cap, self.key_dim), f), "mem_v": ((self.cap, self.in_dim), f),
                "count": ((), torch.int64)}

    def forward(self, z: Tensor, s: dict[str, Tensor]):
        h, c = self.controller(torch.cat([z, s["read"]], dim=-1), (s["ctrl_h"], s["ctrl_c"]))
        g, k = self.gate(h), self.key(h)
        valid = _valid_slots(s["count"], self.cap)
        sim = (s["mem_v"] * z.unsqueeze(1)).sum(-1)  # (B, C)
        keys = s["mem_k"]
        if self.zero_slot:  # Archi's slot 0: key and value 0, so similarity 0 and confidence sigmoid(bias)
            sim, keys = F.pad(sim, (1, 0)), F.pad(keys, (0, 0, 1, 0))
            valid = F.pad(valid, (1, 0), value=True)
        w = torch.softmax(sim.masked_fill(~valid, torch.finfo(sim.dtype).min), dim=-1) * valid.to(sim.dtype)
        conf = torch.sigmoid(self.confidence(sim.unsqueeze(-1)))  # (B, C, 1)
        read = torch.sigmoid(g) * (w.unsqueeze(-1) * torch.cat([keys, conf], dim=-1)).sum(1)
        if self.zero_slot:  # Archi reads nothing at the first step (its not_first_mask), the zero slot included
            read = read * (s["count"] > 0).unsqueeze(-1).to(read.dtype)
        cat = torch.cat([z, h, read], dim=-1)
        oh, oc = self.out_lstm(cat, (s["out_h"], s["out_c"]))
        new = {"ctrl_h": h, "ctrl_c": c, "read": read, "out_h": oh, "out_c": oc,
               "mem_k": _ring_write(s["mem_k"], s["count"], k), "mem_v": _ring_write(s["mem_v"], s["count"], z),
               "count": s["count"] + 1}
        return torch.cat([self.out(oh), cat], dim=-1), new

    def recon_features(self, h: Tensor, state: dict[str, Tensor]) -> Tensor:
        return _last_slots(state["mem_k"], state["count"], self.recon_slots)


def _self_attention(atts: nn.ModuleList, seq: Tensor, ok: Tensor) -> Tensor:
    """Head h's entries seq[:, h] (B, H, k, E) through its own one-head nn.MultiheadAttention atts[h] (what the
    module computes, without dropout), all heads at once; the keys where ok (B, H, k) is False are left out."""
    w_in, b_in = torch.stack([a.in_proj_weight for a in atts]), torch.stack([a.in_proj_bias for a in atts])
    q, k, v = (torch.einsum("bhke,hfe->bhkf", seq, w_in) + b_in[None, :, None]).chunk(3, dim=-1)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=ok.unsqueeze(2))
    w_out, b_out = torch.stack([a.out_proj.weight for a in atts]), torch.stack([a.out_proj.bias for a in atts])
    return torch.einsum("bhke,hfe->bhkf", out, w_out) + b_out[None, :, None]


class DCEMCore(Core):
    """Archi's dual-coding episodic memory core (section 4.3 D); see the module docstring. Its input is the Archi
    encoder's z = [obs-enc; comm-enc; flags; previous action]."""

    def __init__(self, in_dim: int, obs_dim: int, comm_dim: int, flags_dim: int, query: int, heads: int, topk: int,
                 lstm: int, fc, capacity: int, empty_slots: str = "eligible"):
        super().__init__()
        if obs_dim != comm_dim:
            raise ValueError(f"the DCEM needs equal obs and comm encodings, got {obs_dim} and {comm_dim}")
        self.obs_dim, self.flags_dim, self.heads, self.topk, self.cap, self.lstm_dim = (obs_dim, flags_dim, heads,
                                                                                         topk, capacity, lstm)
        self.zero_slots = empty_slots == "eligible"
        self.ext = obs_dim + flags_dim
        # The config's non_linearities ['ReLU', None]: ReLU after the first of the two layers only ("head").
        self.query_comm = FCBody(self.ext, (query, heads * self.ext), "head")  # reads the obs memory
        self.query_obs = FCBody(self.ext, (query, heads * self.ext), "head")  # reads the comm memory
        self.att_obs = nn.ModuleList(nn.MultiheadAttention(self.ext, 1, batch_first=True) for _ in range(heads))
        self.att_comm = nn.ModuleList(nn.MultiheadAttention(self.ext, 1, batch_first=True) for _ in range(heads))
        self.cat_dim = lstm + 2 * heads * self.ext + in_dim
        self.lstm = nn.LSTMCell(self.cat_dim, lstm)
        self.fc = FCBody(lstm, fc, "head")
        self.out_dim, self.recon_dim = self.fc.out_dim, self.cat_dim

    def state_spec(self):
        f = torch.float32
        return {"h": ((self.lstm_dim,), f), "c": ((self.lstm_dim,), f), "mem_obs": ((self.cap, self.ext), f),
                "mem_comm": ((self.cap, self.ext), f), "count": ((), torch.int64), "features": ((self.cat_dim,), f)}

    def _read(self, query: Tensor, keys: Tensor, values: Tensor, count: Tensor, atts: nn.ModuleList) -> Tensor:
        """The heads' reads (B, H ext) of `values` keyed by `keys` (B, C, ext), `count` entries written (>= 1)."""
        b, k = query.shape[0], self.topk
        q = query.view(b, self.heads, self.ext)
        cos = F.cosine_similarity(q.unsqueeze(2), keys.unsqueeze(1), dim=-1, eps=1e-8)  # (B, H, C)
        cos = cos.masked_fill(~_valid_slots(count, self.cap).unsqueeze(1), _NEG)
        if self.zero_slots:
            # Archi's memory holds its zero slot 0 and the written entries, zero-padded to k items: max(1, k - n) zero
            # entries (key and value 0, cosine 0) compete for the top k.
            n_zero = (k - count.clamp(max=self.cap)).clamp(min=1)
            zeros = torch.arange(k, device=count.device)[None, :] < n_zero[:, None]
            cos = torch.cat([cos, torch.full_like(cos[..., :k], _NEG).masked_fill(zeros.unsqueeze(1), 0.0)], dim=-1)
            values = F.pad(values, (0, 0, 0, k))
        # equal cosines (an entry written twice: the same message or stimulus again) go to the lower slot, the
        # earlier entry, on every device
        top, idx = top_k_lowest_index(cos, min(k, cos.shape[-1]))  # (B, H, k)
        ok = top > _NEG / 2  # every pick when the zero slots are eligible; else the written ones
        w = ok.to(top.dtype) / (1e-8 + (1.0 - top).clamp_min(0.0))  # Archi's "inverse_dissim" (L171-174)
        w = w / w.sum(-1, keepdim=True)
        vals = torch.gather(values.unsqueeze(1).expand(-1, self.heads, -1, -1), 2,
                            idx.unsqueeze(-1).expand(-1, -1, -1, self.ext))
        out = _self_attention(atts, w.unsqueeze(-1) * vals, ok)  # (B, H, k, ext)
        return (out * ok.unsqueeze(-1).to(out.dtype)).sum(2).flatten(1)

    def forward(self, z: Tensor, s: dict[str, Tensor]):
        o, f = self.obs_dim, self.flags_dim
        flags = z[:, 2 * o:2 * o + f]
        ext_obs = torch.cat([z[:, :o], flags], dim=-1)
        ext_comm = torch.cat([z[:, o:2 * o], flags], dim=-1)
        # Write first, then read (the config's pipeline, L731-733): the step's own entry can be read.
        mem_obs, mem_comm = _ring_write(s["mem_obs"], s["count"], ext_obs), _ring_write(s["mem_comm"], s["count"],
                                                                                        ext_comm)
        count = s["count"] + 1
        read_obs = self._read(self.query_comm(ext_comm), mem_comm, mem_obs, count, self.att_obs)
        read_comm = self._read(self.query_obs(ext_obs), mem_obs, mem_comm, count, self.att_comm)
        cat = torch.cat([s["h"], read_obs, read_comm, z], dim=-1)
        h, c = self.lstm(cat, (s["h"], s["c"]))
        new = {"h": h, "c": c, "mem_obs": mem_obs, "mem_comm": mem_comm, "count": count, "features": cat}
        return self.fc(h), new

    def recon_features(self, h: Tensor, state: dict[str, Tensor]) -> Tensor:
        return state["features"]


def dnc_usage(usage: Tensor, write_w: Tensor, read_w: Tensor, free: Tensor, floor: float) -> Tensor:
    """DNC usage (B, N) after the previous step's write weights (B, N) and read weights (B, R, N), with free gates
    (B, R): (u + w - u w) prod_r (1 - f_r w^r). Regym floors the previous usage first, u <- floor + (1 - floor) u
    ("for stability", floor 5e-3), so no slot is ever entirely free; floor 0 is Graves et al.'s update."""
    if floor:
        usage = floor + (1 - floor) * usage
    return (usage + write_w - usage * write_w) * torch.prod(1 - free.unsqueeze(-1) * read_w, dim=1)


def dnc_allocation(usage: Tensor) -> Tensor:
    """DNC allocation weights (B, N): slots in order of increasing usage (a stable sort), a_j = (1 - u_j) times the
    product of the usages before it."""
    sorted_u, order = torch.sort(usage, dim=-1, stable=True)
    prod = torch.cumprod(torch.cat([torch.ones_like(sorted_u[:, :1]), sorted_u[:, :-1]], dim=-1), dim=-1)
    return torch.zeros_like(usage).scatter(1, order, (1 - sorted_u) * prod)


def _content_weights(memory: Tensor, keys: Tensor, strengths: Tensor) -> Tensor:
    """DNC content addressing: softmax_n(beta cos(key, M[n])); memory (B, N, W), keys (B, H, W), strengths (B, H)."""
    cos = F.normalize(keys, dim=-1, eps=1e-6) @ F.normalize(memory, dim=-1, eps=1e-6).transpose(1, 2)
    return torch.softmax(strengths.unsqueeze(-1) * cos, dim=-1)


class DNCInterface(NamedTuple):
    """The DNC's interface vector, squashed: read keys (B, R, W), read strengths (B, R), write key (B, 1, W), write
    strength (B, 1), erase (B, W), write vector (B, W), allocation and write gates (B, 1), free gates (B, R), read
    modes (B, R, 3: backward, content, forward)."""

    read_keys: Tensor
    read_str: Tensor
    write_key: Tensor
    write_str: Tensor
    erase: Tensor
    write_vec: Tensor
    alloc_gate: Tensor
    write_gate: Tensor
    free: Tensor
    modes: Tensor


class DNCCore(Core):
    """The Differentiable Neural Computer (Graves et al. 2016) with dense addressing (section 4.3 E)."""

    def __init__(self, in_dim: int, controller, slots: int, width: int, reads: int, out: int, recon: str,
                 recon_slots: int, interface: str = "regym"):
        super().__init__()
        self.n, self.w, self.r, self.recon, self.recon_slots = slots, width, reads, recon, recon_slots
        self.regym = interface == "regym"
        self.controller = LSTMCore(in_dim + reads * width, controller, residual=False)
        # Regym's order (L101-153): read keys, read strengths, write key, write strength, erase, write vector,
        # allocation gate, write gate, free gates, read modes
        self.splits = [reads * width, reads, width, 1, width, width, 1, 1, reads, 3 * reads]
        self.interface = nn.Linear(controller[-1], sum(self.splits))
        self.output = nn.Linear(controller[-1] + reads * width, out)
        self.out_dim = out
        self.recon_dim = sum(controller) if recon == "hidden" else min(recon_slots, slots) * width
        self.register_buffer("off_diagonal", 1.0 - torch.eye(slots), persistent=False)

    def state_spec(self):
        f = torch.float32
        spec = {f"ctrl_{k}": v for k, v in self.controller.state_spec().items()}
        spec.update({"memory": ((self.n, self.w), f), "usage": ((self.n,), f), "link": ((self.n, self.n), f),
                     "precedence": ((self.n,), f), "read_w": ((self.r, self.n), f), "write_w": ((self.n,), f),
                     "reads": ((self.r * self.w,), f)})
        return spec

    def read_interface(self, c_out: Tensor) -> DNCInterface:
        """The interface vector of the controller's output c_out (B, H), split and squashed."""
        b, r, w = c_out.shape[0], self.r, self.w
        keys, read_str, write_key, write_str, erase, write_vec, alloc_gate, write_gate, free, modes = torch.split(
            self.interface(c_out), self.splits, dim=-1)
        if self.regym:  # tanh on the keys and the write vector, softplus strengths (L107-134)
            keys, write_key, write_vec = torch.tanh(keys), torch.tanh(write_key), torch.tanh(write_vec)
            read_str, write_str = F.softplus(read_str), F.softplus(write_str)
        else:  # Graves et al.: raw keys and write vector, "oneplus" strengths
            read_str, write_str = 1 + F.softplus(read_str), 1 + F.softplus(write_str)
        return DNCInterface(keys.view(b, r, w), read_str, write_key.view(b, 1, w), write_str, torch.sigmoid(erase),
                            write_vec, torch.sigmoid(alloc_gate), torch.sigmoid(write_gate), torch.sigmoid(free),
                            torch.softmax(modes.view(b, r, 3), dim=-1))

    def forward(self, x: Tensor, s: dict[str, Tensor]):
        ctrl = {k[5:]: v for k, v in s.items() if k.startswith("ctrl_")}
        c_out, ctrl = self.controller(torch.cat([x, s["reads"]], dim=-1), ctrl)
        i = self.read_interface(c_out)
        memory, link, prec = s["memory"], s["link"], s["precedence"]
        usage = dnc_usage(s["usage"], s["write_w"], s["read_w"], i.free, USAGE_FLOOR if self.regym else 0.0)
        alloc = dnc_allocation(usage)
        content_w = _content_weights(memory, i.write_key, i.write_str)[:, 0]
        write_w = i.write_gate * (i.alloc_gate * alloc + (1 - i.alloc_gate) * content_w)
        memory = memory * (1 - write_w.unsqueeze(-1) * i.erase.unsqueeze(1)) + write_w.unsqueeze(-1) * \
            i.write_vec.unsqueeze(1)
        link = ((1 - write_w.unsqueeze(2) - write_w.unsqueeze(1)) * link + write_w.unsqueeze(2) * prec.unsqueeze(1))
        link = link * self.off_diagonal
        prec = (1 - write_w.sum(-1, keepdim=True)) * prec + write_w
        forward_w = torch.einsum("bij,brj->bri", link, s["read_w"])
        backward_w = torch.einsum("bji,brj->bri", link, s["read_w"])
        content_r = _content_weights(memory, i.read_keys, i.read_str)
        read_w = i.modes[..., 0:1] * backward_w + i.modes[..., 1:2] * content_r + i.modes[..., 2:3] * forward_w
        reads = torch.einsum("brn,bnw->brw", read_w, memory).flatten(1)
        new = {f"ctrl_{k}": v for k, v in ctrl.items()}
        new.update({"memory": memory, "usage": usage, "link": link, "precedence": prec, "read_w": read_w,
                    "write_w": write_w, "reads": reads})
        return self.output(torch.cat([c_out, reads], dim=-1)), new

    def recon_features(self, h: Tensor, state: dict[str, Tensor]) -> Tensor:
        if self.recon == "hidden":
            return torch.cat([state[f"ctrl_h{i}"] for i in range(len(self.controller.sizes))], dim=-1)
        return state["memory"][:, -min(self.recon_slots, self.n):].flatten(1)


class DuelingHead(nn.Module):
    """One-layer dueling head: Q = V + A - mean(A)."""

    def __init__(self, in_dim: int, n_actions: int):
        super().__init__()
        self.value = nn.Linear(in_dim, 1)
        self.advantage = nn.Linear(in_dim, n_actions)

    def forward(self, x: Tensor) -> Tensor:
        adv = self.advantage(x)
        return self.value(x) + adv - adv.mean(dim=-1, keepdim=True)


class QNetwork(nn.Module):
    """encoder -> core -> dueling head over the layout's A actions.

    forward(inputs {name: (B, T, ...)}, state, features=False) -> (q (B, T, A), state, feats (B, T, F) or None);
    step(inputs {name: (B, ...)}, state) -> (q (B, A), state). Inputs are INPUT_KEYS (see train.step_spec).
    """

    def __init__(self, encoder: nn.Module, core: Core, n_actions: int, legal: np.ndarray, head_mask: bool):
        super().__init__()
        self.input_keys = (*INPUT_KEYS, "partner_action") if getattr(encoder, "partner", False) else INPUT_KEYS
        self.encoder, self.core, self.head_mask = encoder, core, head_mask
        self.head = DuelingHead(core.out_dim + (n_actions if head_mask else 0), n_actions)
        self.register_buffer("legal", torch.as_tensor(legal), persistent=False)

    def initial_state(self, batch: int, device=None) -> dict[str, Tensor]:
        return self.core.initial_state(batch, device if device is not None else self.legal.device)

    def legal_mask(self, decision: Tensor) -> Tensor:
        return self.legal[decision.long()]

    def forward(self, inputs: dict[str, Tensor], state: dict[str, Tensor], features: bool = False):
        b, t = inputs["prev_action"].shape[:2]
        flat = {k: v.reshape(b * t, *v.shape[2:]) for k, v in inputs.items() if k in self.input_keys}
        mask = self.legal_mask(flat["decision"])
        x = self.encoder(flat, mask).view(b, t, -1)
        h, state, feats = self.core.unroll(x, state, features)
        if self.head_mask:
            h = torch.cat([h, mask.view(b, t, -1).to(h.dtype)], dim=-1)
        return self.head(h), state, feats

    def step(self, inputs: dict[str, Tensor], state: dict[str, Tensor]):
        q, state, _ = self({k: v.unsqueeze(1) for k, v in inputs.items()}, state)
        return q[:, 0], state


def _init_linear(layer: nn.Linear, style: str) -> None:
    """Regym's layer_init: Xavier-uniform weight, zero bias. Archi's (called by its FC module with w_scale sqrt(2)):
    kaiming-normal weight (fan_out, ReLU gain) x sqrt(2), i.e. std 2 / sqrt(out_features), bias U(-0.08, 0.08)."""
    if style == "regym":
        nn.init.xavier_uniform_(layer.weight)
        nn.init.zeros_(layer.bias)
    else:
        nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
        with torch.no_grad():
            layer.weight.mul_(math.sqrt(2))
        nn.init.uniform_(layer.bias, -ARCHI_BIAS, ARCHI_BIAS)


def _init_lstm(lstm: nn.Module, style: str) -> None:
    """Regym's layer_init_lstm: orthogonal weights, zero biases. Archi's layer_init on an LSTM cell (w_scale 1):
    kaiming-normal weights (fan_out = 4 x hidden, ReLU gain), biases U(-0.08, 0.08)."""
    for name, p in lstm.named_parameters():
        if name.startswith("weight"):
            if style == "regym":
                nn.init.orthogonal_(p)
            else:
                nn.init.kaiming_normal_(p, mode="fan_out", nonlinearity="relu")
        elif style == "regym":
            nn.init.zeros_(p)
        else:
            nn.init.uniform_(p, -ARCHI_BIAS, ARCHI_BIAS)


def initialise(net: QNetwork, style: str) -> None:
    """The originals' initialisation (module docstring): `style` "regym" ("lstm", "dnc") or "archi" (the Archi cores)
    for every Linear and LSTM layer but the self-attention modules' (PyTorch's own, as Archi left them); the dueling
    head is Regym's DuelingLayer in both; the DNC's interface and output layers as Regym's DNC."""
    attention = {id(m) for a in net.modules() if isinstance(a, nn.MultiheadAttention) for m in a.modules()}
    if net.core.own_init:  # a user's core keeps its own initialisation
        attention |= {id(m) for m in net.core.modules()}
    for m in net.modules():
        if id(m) in attention:
            continue
        if isinstance(m, nn.Linear):
            _init_linear(m, style)
        elif isinstance(m, (nn.LSTM, nn.LSTMCell)):
            _init_lstm(m, style)
    _init_linear(net.head.value, "regym")
    _init_linear(net.head.advantage, "regym")
    if isinstance(net.core, DNCCore):
        core, weight = net.core, net.core.output.weight
        vt = nn.init.orthogonal_(weight.new_empty(weight.shape[0], core.controller.sizes[-1]))  # linear_output
        reads = nn.init.xavier_uniform_(weight.new_empty(weight.shape[0], core.r * core.w))  # output_fn: no scale
        with torch.no_grad():
            nn.init.orthogonal_(core.interface.weight).mul_(1e-3)
            weight.copy_(torch.cat([vt * 1e-3, reads], dim=1))
        nn.init.zeros_(core.interface.bias)
        nn.init.zeros_(core.output.bias)


def build_network(config: NetConfig, dims: InputDims, layout: ActionLayout, partner_action: bool = False) -> QNetwork:
    """The QNetwork of `config.core` for these input sizes and actions; partner_action adds SAD's input (the
    partner's previous greedy action, one-hot, last in the encoder's concatenation)."""
    c = config
    if layout.n_actions != dims.n_actions:
        raise ValueError(f"dims.n_actions ({dims.n_actions}) must equal the layout's ({layout.n_actions})")
    if c.core in ("lstm", "dnc"):
        encoder = RegymEncoder(dims, c.phi, c.critic if c.core == "lstm" else (), c.fc_activation, partner_action)
        if c.core == "lstm":
            core: Core = LSTMCore(encoder.out_dim, c.lstm, residual=True)
        else:
            core = DNCCore(encoder.out_dim, c.dnc_controller, c.dnc_slots, c.dnc_width, c.dnc_reads, c.dnc_out,
                           c.dnc_recon, c.recon_slots, c.dnc_interface)
        net = QNetwork(encoder, core, dims.n_actions, layout.legal, head_mask=False)
        initialise(net, "regym")
        return net
    if c.core not in (*ARCHI_CORES, USER):
        raise ValueError(f"core must be one of {CORES}, got {c.core!r}")
    encoder = ArchiEncoder(dims, c.archi_obs, c.archi_comm, partner_action)
    if c.core == "archi_lstm":
        core = LSTMCore(encoder.out_dim, (c.archi_lstm,), residual=False)
    elif c.core == USER:
        from reprobench.s2b.user_core import UserCore

        core = UserCore(c.user_core, encoder.out_dim)
    elif c.core == "esbn":
        core = ESBNCore(encoder.out_dim, c.esbn_controller, c.esbn_key, c.esbn_lstm, c.esbn_out, c.memory_capacity,
                        c.recon_slots, c.empty_slots)
    else:
        core = DCEMCore(encoder.out_dim, encoder.obs_dim, encoder.comm_dim, dims.flags, c.dcem_query, c.dcem_heads,
                        c.dcem_topk, c.dcem_lstm, c.dcem_fc, c.memory_capacity, c.empty_slots)
    net = QNetwork(encoder, core, dims.n_actions, layout.legal, head_mask=True)
    initialise(net, "archi")
    return net
