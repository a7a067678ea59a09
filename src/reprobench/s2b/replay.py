"""Prioritised sequence replay for R2D2 (specs/s2b.md section 4.2): fixed-length stored sequences with their
recurrent state, a sum-tree over priorities, the priority mixture eta max + (1 - eta) mean of |TD|, importance weights.

Why not a library: TorchRL's prioritised buffers need its C++ extension, which does not load with torch 2.13
(specs/amtlb.md section 3.2: `SumSegmentTreeFp32 is not available`), and the tree holds at most 5e4 sequences
(Table 2), so a numpy sum-tree whose batch sampling and batch updates are vectorised over the batch (one pass per
tree level) costs microseconds per update.

Sequences: each actor's transitions are cut into stored windows of `seq_len` steps (the unroll length: 20 in Table
2 and Figure 6, 40 in Table 4 and Figure 5), each stored with the recurrent state the actor acted from on its first step
(R2D2's "stored state"); the learner's burn-in is the window's first steps. Windows never cross an episode's end. Two
layouts (R2D2Config.sequences; DEVIATIONS S18, S19):

- `RegymSequenceBuilder` ("regym", as run: Regym's R2D2Algorithm.store and _add_sequence_to_replay_storage, r2d2.py
  L193-205 and L338-367 at 2ad02503, the same at dc5affee and 752e46d0): a window of the actor's last `seq_len` steps is
  stored at every step whose count in the episode is a multiple of `every`, once the episode has `seq_len` steps;
  `every` is `overlap` until Regym 0ad9ce36 (2023-06-15) and `seq_len - overlap` after it. At the terminal step the
  last `seq_len` steps are stored, whatever their alignment; an episode shorter than `seq_len` is padded with copies of
  its terminal transition, which are trained (`valid` is True everywhere).
- `SequenceBuilder` ("aligned", the R2D2 paper's layout): windows start every `seq_len - overlap` steps from the
  episode's start; the last partial window of an episode is stored with `valid` False on its padding, which is not
  trained. With Table 2's T = 20, burn-in 10, overlap 10 and n = 3 the learner fits positions 10..16 of a window (the
  last n need a bootstrap past the window), positions 17..19 are the next window's burn-in, so they are never fitted
  unless a terminal ends their return, and an episode's first 10 steps are only ever burn-in.

Capacity is counted in sequences in both: capacity in experiences / (seq_len - overlap), as Regym does in every era
(5e5 experiences -> 50,000 sequences), although before 0ad9ce36 a window was stored every `overlap` steps.

Priorities (`PrioritizedSequenceReplay`): the sum-tree holds p_i^alpha (alpha 0.9) with p_i = the priority mixture +
`priority_eps`, and is sampled stratified: the total is cut into `batch` equal segments and one point is drawn uniformly
in each. Importance weights (DEVIATIONS S17): "unnormalised", Regym's (PrioritizedReplayBuffer.py L774 in every era),
w_i = (N p_i^alpha)^-beta with the raw leaf (beta 0.6, constant), no division by the total and no normalisation; or
"normalised", the PER paper's, w_i = (N P(i))^-beta with P(i) = p_i^alpha / sum_j p_j^alpha, divided by the batch's
largest weight. A new sequence gets the largest leaf so far, at least 1 (Regym's max_priority starts at 1, as the
PER paper's p_1 = 1). The oldest sequence is overwritten when full (FIFO), as Regym's storage does.

Priorities from the device (`update_priorities` given a tensor) are held pending and written into the sum-tree at
the replay's next use (add, sample, state_dict, or a read of `tree` / `max_priority`), which is when they are first
needed, or at `flush()`: the learner step that computed them never waits for the device, and the trainer flushes
in its next acting step, after the actions' own sync, when there is nothing left to wait for. The tree is the same
at every read as with an immediate write, so results do not change.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

Spec = Mapping[str, tuple[tuple[int, ...], np.dtype]]
IMPORTANCE_WEIGHTS = ("unnormalised", "normalised")
PRIORITY_MEANS = ("all", "trained")


def _positive(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def to_device(array, device) -> torch.Tensor:
    """A host array on `device`. On CUDA through pinned memory without waiting: a blocking copy (as from pageable
    memory) makes torch synchronise the stream, a host sync per array. Elsewhere the array itself (as_tensor)."""
    device = torch.device(device)
    tensor = torch.as_tensor(array)
    if device.type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


def priority_mixture(td_abs: torch.Tensor, mask: torch.Tensor, eta: float, mean_over: str = "trained") -> torch.Tensor:
    """R2D2's sequence priority eta max_t |TD_t| + (1 - eta) mean_t |TD_t| of the masked (trainable) steps' errors,
    the mean over those steps ("trained") or over all the T positions, the masked ones counting as zeros ("all":
    Regym's sequence_priority, PrioritizedReplayBuffer.py L672-679, is handed the masked errors of every position).

    td_abs, mask: (B, T); returns (B,) on the same device, without a host sync; 0 for a sequence with no step.
    """
    if mean_over not in PRIORITY_MEANS:
        raise ValueError(f"mean_over must be one of {PRIORITY_MEANS}, got {mean_over!r}")
    m = mask.to(td_abs.dtype)
    td = td_abs * m
    mean = td.sum(dim=1) / m.sum(dim=1).clamp_min(1.0) if mean_over == "trained" else td.mean(dim=1)
    return eta * td.amax(dim=1) + (1.0 - eta) * mean


class StateHistory:
    """The recurrent states N actors acted from on their last `depth` steps, kept where they live (one push per
    environment step: on an accelerator a copy there, no host sync); read(rows, back) copies to the host the state
    that actor rows[i] acted from back[i] pushes before the last. Depth 1 keeps a view of the last push (no copy).

    push(states {name: (N, ...)} tensors or arrays); read -> {name: (len(rows), ...) numpy}.
    """

    def __init__(self, depth: int):
        self.depth = _positive("depth", depth)
        self.ring: dict[str, torch.Tensor] | None = None  # {name: (depth, N, ...)}
        self.last = 0  # the slot of the last push

    def push(self, states: Mapping) -> None:
        states = {k: torch.as_tensor(v) for k, v in states.items()}
        if self.depth == 1:
            self.ring = {k: v.unsqueeze(0) for k, v in states.items()}
            return
        if self.ring is None:
            self.ring = {k: v.new_zeros((self.depth, *v.shape)) for k, v in states.items()}
        self.last = (self.last + 1) % self.depth
        for k, v in states.items():
            if self.ring[k].device != v.device:  # a loaded history, first pushed to on the run's device
                self.ring[k] = self.ring[k].to(v.device)
            self.ring[k][self.last] = v

    def read(self, rows, back) -> dict[str, np.ndarray]:
        rows = np.asarray(rows, dtype=np.int64)
        back = np.broadcast_to(np.asarray(back, dtype=np.int64), rows.shape)
        if (back < 0).any() or (back >= self.depth).any():
            raise ValueError(f"back must lie in [0, {self.depth}), got {back.tolist()}")
        device = next(iter(self.ring.values())).device
        r, s = to_device(rows, device), to_device((self.last - back) % self.depth, device)
        return {k: v[s, r].cpu().numpy() for k, v in self.ring.items()}  # the stored states' copy to the host

    def state_dict(self) -> dict:
        if self.depth == 1 or self.ring is None:  # depth 1 holds nothing that the next push does not replace
            return {"ring": None, "last": self.last}
        return {"ring": {k: v.cpu() for k, v in self.ring.items()}, "last": self.last}

    def load_state_dict(self, state: Mapping) -> None:
        self.ring = None if state["ring"] is None else {k: v.clone() for k, v in state["ring"].items()}
        self.last = int(state["last"])


class SumTree:
    """A binary sum-tree over `capacity` non-negative leaves, in one float64 array (1-based heap: root at 1, leaves at
    size .. 2 size - 1, size the next power of two). find/update work on whole batches, one numpy pass per level."""

    def __init__(self, capacity: int):
        self.capacity = _positive("capacity", capacity)
        self.size = 1 << max(self.capacity - 1, 0).bit_length()
        self.depth = self.size.bit_length() - 1
        self.tree = np.zeros(2 * self.size, dtype=np.float64)

    @property
    def total(self) -> float:
        return float(self.tree[1])

    def leaves(self, indices=None) -> np.ndarray:
        leaf = self.tree[self.size:self.size + self.capacity]
        return leaf.copy() if indices is None else leaf[np.asarray(indices)]

    def update(self, indices, values) -> None:
        """Set leaves `indices` (k,) to `values` (k,) (>= 0), then recompute their ancestors level by level."""
        idx = np.asarray(indices, dtype=np.int64)
        val = np.asarray(values, dtype=np.float64)
        if idx.shape != val.shape or idx.ndim != 1:
            raise ValueError(f"indices and values must be 1-D of one shape, got {idx.shape} and {val.shape}")
        if idx.size == 0:
            return
        if (idx < 0).any() or (idx >= self.capacity).any():
            raise ValueError(f"indices must lie in [0, {self.capacity}), got {idx.tolist()}")
        if not np.isfinite(val).all() or (val < 0).any():
            raise ValueError(f"values must be finite and >= 0, got {val.tolist()}")
        node = idx + self.size
        self.tree[node] = val  # a repeated index keeps its last value
        for _ in range(self.depth):
            node = np.unique(node >> 1)
            self.tree[node] = self.tree[2 * node] + self.tree[2 * node + 1]

    def find(self, values) -> np.ndarray:
        """Leaf index i of each prefix-sum value v in [0, total): sum(leaves[:i]) <= v < sum(leaves[:i + 1]); a
        zero-weight leaf is never returned."""
        v = np.array(values, dtype=np.float64)
        node = np.ones(v.shape, dtype=np.int64)
        for _ in range(self.depth):
            left = 2 * node
            right_weight = self.tree[left + 1]
            go_right = ((v >= self.tree[left]) & (right_weight > 0)) | (self.tree[left] <= 0)
            v = np.where(go_right, v - self.tree[left], v)
            node = np.where(go_right, left + 1, left)
        return np.minimum(node - self.size, self.capacity - 1)

    def sample(self, batch: int, rng: np.random.Generator) -> np.ndarray:
        """`batch` leaves drawn in proportion to their values, stratified (one uniform point per 1/batch segment)."""
        total = self.total
        if total <= 0:
            raise ValueError("cannot sample from an empty sum-tree (total priority 0)")
        points = (np.arange(batch) + rng.random(batch)) * (total / batch)
        return self.find(np.minimum(points, np.nextafter(total, 0)))


class PrioritizedSequenceReplay:
    """Stored sequences (capacity C, length T) of per-step arrays (`step_spec`: name -> (shape, dtype), stored as
    (C, T, *shape)) plus `valid` (C, T) and one recurrent state per sequence (`state_spec`, stored as (C, *shape)).

    add(steps, valid, states) stores M sequences at the largest priority so far; sample(batch) returns (indices (B,),
    {name: (B, T, ...)} with `valid`, {state: (B, ...)}, weights (B,) float32, `weights` one of IMPORTANCE_WEIGHTS);
    update_priorities(indices, p) sets the raw priorities p (the mixture of |TD|), stored as (p + priority_eps)^alpha:
    at once for an array, at the replay's next use for a tensor (see the module docstring).
    """

    def __init__(self, capacity: int, seq_len: int, step_spec: Spec, state_spec: Spec, alpha: float = 0.9,
                 beta: float = 0.6, priority_eps: float = 1e-6, seed: int = 0, weights: str = "normalised"):
        self.capacity = _positive("capacity", capacity)
        self.seq_len = _positive("seq_len", seq_len)
        for name, value in (("alpha", alpha), ("beta", beta), ("priority_eps", priority_eps)):
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if weights not in IMPORTANCE_WEIGHTS:
            raise ValueError(f"weights must be one of {IMPORTANCE_WEIGHTS}, got {weights!r}")
        self.alpha, self.beta, self.priority_eps = float(alpha), float(beta), float(priority_eps)
        self.weights = weights
        self.steps = {k: np.zeros((self.capacity, self.seq_len, *shape), dtype=dtype)
                      for k, (shape, dtype) in step_spec.items()}
        self.valid = np.zeros((self.capacity, self.seq_len), dtype=bool)
        self.states = {k: np.zeros((self.capacity, *shape), dtype=dtype) for k, (shape, dtype) in state_spec.items()}
        self._tree = SumTree(self.capacity)
        self.rng = np.random.default_rng(seed)
        self._max_priority = 0.0  # the largest raw priority so far (none yet)
        self._pending: tuple[np.ndarray, torch.Tensor] | None = None  # (indices, priorities) not yet in the tree
        self.next = 0  # sequences ever added
        self.size = 0

    @property
    def tree(self) -> SumTree:
        self.flush()
        return self._tree

    @property
    def max_priority(self) -> float:
        self.flush()
        return self._max_priority

    def __len__(self) -> int:
        return self.size

    def add(self, steps: Mapping[str, np.ndarray], valid: np.ndarray, states: Mapping[str, np.ndarray]) -> np.ndarray:
        valid = np.asarray(valid, dtype=bool)
        m = len(valid)
        if valid.shape != (m, self.seq_len):
            raise ValueError(f"valid must be (M, {self.seq_len}), got {valid.shape}")
        if set(steps) != set(self.steps) or set(states) != set(self.states):
            raise ValueError(f"steps/states keys must be {sorted(self.steps)} / {sorted(self.states)}, got "
                             f"{sorted(steps)} / {sorted(states)}")
        if m == 0:
            return np.zeros(0, dtype=np.int64)
        idx = (self.next + np.arange(m)) % self.capacity
        for k, arr in steps.items():
            self.steps[k][idx] = arr
        for k, arr in states.items():
            self.states[k][idx] = arr
        self.valid[idx] = valid
        self.tree.update(idx, np.full(m, max(1.0, (self.max_priority + self.priority_eps) ** self.alpha)))
        self.next += m
        self.size = min(self.size + m, self.capacity)
        return idx

    def sample(self, batch: int):
        batch = _positive("batch", batch)
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay")
        idx = self.tree.sample(batch, self.rng)
        leaves = self.tree.leaves(idx)
        if self.weights == "normalised":  # the PER paper's
            weights = (self.size * (leaves / self.tree.total)) ** (-self.beta)
            weights = (weights / weights.max()).astype(np.float32)
        else:  # Regym's: the raw leaf p_i^alpha, not the probability, and no normalisation
            weights = ((self.size * leaves) ** (-self.beta)).astype(np.float32)
        steps = {k: v[idx] for k, v in self.steps.items()}
        steps["valid"] = self.valid[idx]
        return idx, steps, {k: v[idx] for k, v in self.states.items()}, weights

    def update_priorities(self, indices, priorities) -> None:
        self.flush()  # an earlier pending update goes in first, as it came first
        if isinstance(priorities, torch.Tensor):
            self._pending = (np.array(indices, dtype=np.int64), priorities.detach())
            return
        p = np.asarray(priorities, dtype=np.float64)
        if not np.isfinite(p).all() or (p < 0).any():
            raise ValueError(f"priorities must be finite and >= 0, got {p.tolist()}")
        if p.size:
            self._max_priority = max(self._max_priority, float(p.max()))
        self._tree.update(indices, (p + self.priority_eps) ** self.alpha)

    def flush(self) -> None:
        """Write the pending priorities into the tree: their one copy to the host (a host sync on an accelerator)."""
        if self._pending is not None:
            indices, priorities = self._pending
            self._pending = None
            self.update_priorities(indices, priorities.cpu().numpy())

    def state_dict(self) -> dict:
        tree = self.tree  # (flushes)
        return {"steps": self.steps, "valid": self.valid, "states": self.states, "tree": tree.tree,
                "rng": self.rng.bit_generator.state, "max_priority": self._max_priority, "next": self.next,
                "size": self.size}

    def load_state_dict(self, state: Mapping) -> None:
        for k in self.steps:
            self.steps[k] = np.array(state["steps"][k], dtype=self.steps[k].dtype)
        for k in self.states:
            self.states[k] = np.array(state["states"][k], dtype=self.states[k].dtype)
        self.valid = np.array(state["valid"], dtype=bool)
        self._pending = None  # the loaded tree replaces whatever was pending
        self._tree.tree = np.array(state["tree"], dtype=np.float64)
        self.rng.bit_generator.state = state["rng"]
        self._max_priority, self.next, self.size = float(state["max_priority"]), int(state["next"]), int(state["size"])


class SequenceBuilder:
    """Cuts N actors' transitions into stored sequences, the R2D2 paper's layout (see the module docstring).

    add(steps, states, active, done): steps {name: (N, ...)} is the transition each actor just made, states
    {name: (N, ...)} (tensors, on any device, or arrays) the recurrent state it acted from, of which only the few rows
    where a window starts are copied to the host (large states, memories, stay on the device); active (N,) which actors
    made one (False on an autoreset step), done (N,) which transitions ended an episode. Returns the finished windows
    as (steps {name: (M, T, ...)}, valid (M, T), states {name: (M, ...)}), ready for PrioritizedSequenceReplay.add, or
    None.
    """

    def __init__(self, n_actors: int, seq_len: int, overlap: int, step_spec: Spec, state_spec: Spec):
        self.n = _positive("n_actors", n_actors)
        self.seq_len = _positive("seq_len", seq_len)
        self.overlap = _positive("overlap", overlap, 0)
        if 2 * self.overlap > self.seq_len:
            raise ValueError(f"overlap must be at most seq_len / 2 ({self.seq_len / 2:g}; the next window's stored "
                             f"state is taken when it is reached), got {overlap!r}")
        self.stride = self.seq_len - self.overlap
        self.buf = {k: np.zeros((self.n, self.seq_len, *shape), dtype=dtype) for k, (shape, dtype) in
                    step_spec.items()}
        self.start = {k: np.zeros((self.n, *shape), dtype=dtype) for k, (shape, dtype) in state_spec.items()}
        self.next_start = {k: np.zeros((self.n, *shape), dtype=dtype) for k, (shape, dtype) in state_spec.items()}
        self.pos = np.zeros(self.n, dtype=np.int64)  # steps held in the current window
        self.fresh = np.zeros(self.n, dtype=np.int64)  # of which not yet stored
        self.history = StateHistory(1)

    def add(self, steps: Mapping[str, np.ndarray], states: Mapping, active, done):
        active = np.asarray(active, dtype=bool)
        done = np.asarray(done, dtype=bool) & active
        self.history.push(states)
        a = np.flatnonzero(active)
        pos = self.pos[a]
        first, second = a[pos == 0], a[pos == self.stride]
        rows = np.union1d(first, second)
        if rows.size:
            got = self.history.read(rows, 0)
            for k in self.start:
                self.start[k][first] = got[k][np.searchsorted(rows, first)]
                self.next_start[k][second] = got[k][np.searchsorted(rows, second)]
        for k in self.buf:
            self.buf[k][a, pos] = steps[k][a]
        self.pos[a] += 1
        self.fresh[a] += 1
        full = self.pos == self.seq_len
        emit = full | (done & (self.fresh > 0))
        if not emit.any():
            return None
        e = np.flatnonzero(emit)
        valid = np.arange(self.seq_len)[None, :] < self.pos[e, None]
        out = {}
        for k, arr in self.buf.items():
            win = arr[e].copy()
            win[~valid] = 0
            out[k] = win
        out_states = {k: v[e].copy() for k, v in self.start.items()}
        shift = np.flatnonzero(full & ~done)
        if shift.size:
            for k in self.buf:
                self.buf[k][shift, :self.overlap] = self.buf[k][shift, self.stride:]
            if self.overlap:
                for k in self.start:
                    self.start[k][shift] = self.next_start[k][shift]
            self.pos[shift] = self.overlap
        self.fresh[e] = 0
        self.pos[done] = 0
        return out, valid, out_states

    def state_dict(self) -> dict:
        return {"buf": self.buf, "start": self.start, "next_start": self.next_start, "pos": self.pos,
                "fresh": self.fresh}

    def load_state_dict(self, state: Mapping) -> None:
        for name in ("buf", "start", "next_start"):
            own = getattr(self, name)
            for k in own:
                own[k] = np.array(state[name][k], dtype=own[k].dtype)
        self.pos = np.array(state["pos"], dtype=np.int64)
        self.fresh = np.array(state["fresh"], dtype=np.int64)


class RegymSequenceBuilder:
    """Cuts N actors' transitions into stored sequences as Regym did (see the module docstring): the actor's last
    `seq_len` steps are stored at every step whose count in the episode is a multiple of `every` once the episode has
    `seq_len` steps, and at its terminal step; there an episode shorter than `seq_len` is padded with copies of its
    terminal transition. add() and its return are SequenceBuilder's, with `valid` True everywhere (Regym trains the
    copies). The stored state is the one the window's first step acted from, except in a padded window: that starts
    at the episode's start, from the zero state (train._Actors), so it carries the state the terminal step acted from,
    which Regym's unroll re-reads for every step after a terminal (r2d2_loss.py L405-430 at 2ad02503) and which the
    learner evaluates the copies from (r2d2.R2D2Learner). Every actor's state is kept for its last `seq_len` steps
    (a StateHistory on the states' device), as the terminal window may start at any step.
    """

    def __init__(self, n_actors: int, seq_len: int, every: int, step_spec: Spec, state_spec: Spec):
        self.n = _positive("n_actors", n_actors)
        self.seq_len = _positive("seq_len", seq_len)
        self.every = _positive("every", every)
        self.buf = {k: np.zeros((self.n, self.seq_len, *shape), dtype=dtype) for k, (shape, dtype) in
                    step_spec.items()}  # the episode's step c at c % seq_len
        self.count = np.zeros(self.n, dtype=np.int64)  # steps in the current episode
        self.history = StateHistory(self.seq_len)

    def add(self, steps: Mapping[str, np.ndarray], states: Mapping, active, done):
        active = np.asarray(active, dtype=bool)
        done = np.asarray(done, dtype=bool) & active
        self.history.push(states)
        a = np.flatnonzero(active)
        for k in self.buf:
            self.buf[k][a, self.count[a] % self.seq_len] = steps[k][a]
        self.count[a] += 1
        emit = done | (active & (self.count >= self.seq_len) & (self.count % self.every == 0))
        if not emit.any():
            return None
        e = np.flatnonzero(emit)
        held = np.minimum(self.count[e], self.seq_len)[:, None]  # real steps in the window, the rest copies
        step = self.count[e, None] - held + np.minimum(np.arange(self.seq_len), held - 1)
        out = {k: arr[e[:, None], step % self.seq_len] for k, arr in self.buf.items()}
        padded = held[:, 0] < self.seq_len
        out_states = self.history.read(e, np.where(padded, 0, self.seq_len - 1))
        self.count[done] = 0
        return out, np.ones((len(e), self.seq_len), dtype=bool), out_states

    def state_dict(self) -> dict:
        return {"buf": self.buf, "count": self.count, "history": self.history.state_dict()}

    def load_state_dict(self, state: Mapping) -> None:
        for k in self.buf:
            self.buf[k] = np.array(state["buf"][k], dtype=self.buf[k].dtype)
        self.count = np.array(state["count"], dtype=np.int64)
        self.history.load_state_dict(state["history"])
