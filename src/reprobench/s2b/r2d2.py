"""The R2D2 learner of the S2B baselines (specs/s2b.md section 4.2) and the auxiliary reconstruction loss (4.4).

Learner step (`R2D2Learner.train`): `n_minibatches` batches of stored sequences (T = unroll steps, each with the
recurrent state stored when it was collected) are sampled by priority; per batch the online network runs the first
`burn_in` steps from the stored state without gradient, then the remaining steps with gradient; the target network
runs all T steps from the stored state. n-step double-Q targets (no value rescaling: the reference had it off,
Table 5 "Value function rescaling: None"):

    y_t = sum_{k<n} gamma^k r_{t+k} [no terminal before t+k] + gamma^n [no terminal in t..t+n-1] Q_tgt(s_{t+n}, a*),
    a* = argmax_a Q_online(s_{t+n}, a)

loss = 0.5 mean_{B, T - burn_in}(w_IS (y - Q(s_t, a_t))^2 mask). The mask (R2D2Config.sequences, DEVIATIONS S19):
Regym's, every step after the burn-in except the window's last n, which are trained only where the step is itself
terminal, so the copies of a terminal transition that pad a short episode's window are trained, each evaluated from
the state the terminal step acted from (`_player_values`); or, with the aligned layout, a real step whose target
exists (the last n steps are masked unless a terminal ends the return first). The loss of each batch is divided by
n_minibatches and accumulated into one Adam step (betas 0.9 / 0.999), clipped at global norm 5. Priorities: eta max
|TD| + (1 - eta) mean |TD| over the masked steps, the mean over every position after the burn-in (Regym) or over the
masked ones (reprobench.s2b.replay.priority_mixture).

Host syncs in the learner step: none. The batches go to the device through pinned memory without waiting
(`to_device`; a plain copy from pageable memory makes torch wait for the device's queue); the (n_minibatches B,)
priorities are handed to the replay as a device tensor, which copies them to its numpy sum-tree (replay.py says why
numpy) at its next use: the trainer's next acting step (train.Trainer._store), or the next train() call's sample
when calls come back to back (Table 4's bursts of 4), where prioritised replay needs them; losses stay on the device
(the caller reads them when it logs).

Faithful/corrected (sections 6.3 items 6, 6b; 6.4):
- `double_q`: "unmasked" (faithful: the argmax runs over all A actions, illegal ones included) or "masked" (corrected:
  over the actions legal at s_{t+n}).
- `target_update`: "faithful" (the 2021-22 Regym: `tau` read as a hard copy every int(1/tau) "actor updates", the
  counter growing by n_actors per update and the copy made once it is past the interval, `>` (dqn.py L382 at
  dc5affee), then reset to 0: every floor(int(1/tau) / n_actors) + 1 updates, 79 for tau 4e-4 and 32 actors, 626 with
  4), "period" (the R2D2 paper's and Table 5's wording: a hard copy every int(1/tau) = 2500 updates) or "soft"
  (Polyak averaging theta' <- (1 - tau) theta' + tau theta after every update, what `tau` means in Regym since 2023).
- The replay's importance weights, sequence layout and priority mean (R2D2Config; DEVIATIONS S17-S20).

Exploration (Ape-X, section 4.2): eps_i = eps^(1 + alpha i / (N - 1)) for actor i of N (eps 0.4, alpha 2: 0.4 ...
0.064), decayed from eps_start = 1 with time constant 3e4 observations: eps_i(t) = eps_i + (1 - eps_i) exp(-t / 3e4).

Reconstruction (`Reconstruction`, section 4.4): per signal a predictor Linear(h -> 512) + ReLU + Linear(512 -> D) on
the core's reconstruction features (cores.Core.recon_features): the listener's stimulus (MSE; target (1 + x) / 2 for
the old Regym cores "lstm"/"dnc", raw x for the Archi ones) and the multi-binary channel (BCE with logits); lambda 1
each; the loss is summed over the steps of whole episodes re-run from the zero state and averaged over episodes; its
own Adam (lr 3e-4, eps 1e-16, no clipping) over the predictors and every agent parameter. `biasing` True lets the
gradient into the agent; False detaches the features (a probe).

As Regym (r2d2_loss.py at 2ad02503): the loss mean runs over all B (T - burn_in) entries, masked ones counting as
zeros (L1030, the spec's "mean(w |y - Q|^2 mask)"); both networks are burnt in from the same stored state (L782-807).
Choices where the spec is silent: the MSE and BCE of one step are means over their dimensions; the stimulus accuracy
counts dimensions within `threshold` of the target (in the target's scale); the channel accuracy counts positions
whose argmax is the token, over steps whose message is not all EoS.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from reprobench.s2b.cores import QNetwork, comm_one_hot
from reprobench.s2b.replay import (
    IMPORTANCE_WEIGHTS,
    PRIORITY_MEANS,
    PrioritizedSequenceReplay,
    priority_mixture,
    to_device,
)

TARGET_UPDATES = ("faithful", "period", "soft")
DOUBLE_Q = ("unmasked", "masked")
SEQUENCES = ("regym", "aligned")
STORE_EVERY = ("overlap", "stride")
STIMULUS_SCALES = ("unit", "raw")
SIGNALS = ("stimulus", "comm")


def _check(name: str, value, kind=int, minimum=None, maximum=None):
    ok = not isinstance(value, bool) and isinstance(value, (int, np.integer) if kind is int else (int, float))
    if ok and kind is float:
        ok = math.isfinite(value)
    if ok and minimum is not None:
        ok = value >= minimum
    if ok and maximum is not None:
        ok = value <= maximum
    if not ok:
        bounds = f"{'' if minimum is None else f' >= {minimum}'}{'' if maximum is None else f' <= {maximum}'}"
        raise ValueError(f"{name} must be {'an integer' if kind is int else 'a number'}{bounds}, got {value!r}")


@dataclass(frozen=True)
class R2D2Config:
    """R2D2 hyperparameters; the defaults are Table 2's as run in 2022 (specs/s2b.md section 4.2, first column).

    replay_capacity and min_capacity count experiences (steps); the replay holds
    replay_capacity // (unroll - overlap) sequences and training starts once it holds
    ceil(min_capacity / (unroll - overlap)) of them and, in the Archi runs, once the actors have handled
    min_handled experiences (Regym's `min_handled_experiences`: 2e3 for Table 4's LSTM, 1 for ESBN and DCEM).

    Replay, faithful (Regym as run) / corrected (DEVIATIONS S17-S20; train.corrected):
    - importance_weights: "unnormalised", Regym's (N p_i^alpha)^-beta, or "normalised", the PER paper's (replay.py).
    - sequences: "regym", Regym's storage (replay.RegymSequenceBuilder: the last `unroll` steps stored every
      `store_interval` steps and at the terminal step, short episodes padded with trained copies of the terminal
      transition; the window's last n steps trained only where terminal), or "aligned", the R2D2 paper's windows every
      unroll - overlap steps with the padding masked and every step with a target trained.
    - store_every: Regym's spacing in the run's era: "overlap" (until Regym 0ad9ce36, 2023-06-15: Table 2, Figures 5
      and 6) or "stride" (unroll - overlap, after it: Table 4's code); read by "regym" only.
    - priority_mean: the priority mixture's mean over "all" T - burn_in positions, the masked ones as zeros (Regym),
      or over the "trained" ones; priority_eps 2e-4 is Regym's 1e-4 added twice (PrioritizedReplayBuffer.py L678
      and L670), 1e-6 ours.
    """

    lr: float = 6.25e-5
    adam_eps: float = 1e-12
    batch_size: int = 32
    n_minibatches: int = 1
    unroll: int = 20
    burn_in: int = 10
    overlap: int = 10
    n_step: int = 3
    gamma: float = 0.997
    tau: float = 4e-4
    target_update: str = "faithful"
    replay_capacity: int = 500_000
    min_capacity: int = 40_000
    min_handled: int = 0
    alpha: float = 0.9
    beta: float = 0.6
    eta: float = 0.9
    priority_eps: float = 2e-4
    importance_weights: str = "unnormalised"
    sequences: str = "regym"
    store_every: str = "overlap"
    priority_mean: str = "all"
    grad_clip: float = 5.0
    eps: float = 0.4
    eps_alpha: float = 2.0
    eps_start: float = 1.0
    eps_decay: float = 3e4
    double_q: str = "unmasked"
    updates_per_step: int = 1
    episodes_per_cycle: int | None = None
    train_calls_per_cycle: int = 4

    def __post_init__(self):
        for name in ("batch_size", "n_minibatches", "unroll", "n_step", "replay_capacity", "train_calls_per_cycle"):
            _check(name, getattr(self, name), int, 1)
        for name in ("burn_in", "overlap", "min_capacity", "min_handled", "updates_per_step"):
            _check(name, getattr(self, name), int, 0)
        if self.burn_in >= self.unroll:
            raise ValueError(f"burn_in must be smaller than unroll ({self.unroll}), got {self.burn_in!r}")
        if 2 * self.overlap > self.unroll:
            raise ValueError(f"overlap must be at most unroll / 2, got {self.overlap!r}")
        if self.episodes_per_cycle is not None:
            _check("episodes_per_cycle", self.episodes_per_cycle, int, 1)
        for name in ("lr", "adam_eps", "eps_decay", "grad_clip"):
            _check(name, getattr(self, name), float, 0)
        for name in ("gamma", "tau", "alpha", "beta", "eta", "eps", "eps_start"):
            _check(name, getattr(self, name), float, 0, 1)
        _check("eps_alpha", self.eps_alpha, float, 0)
        _check("priority_eps", self.priority_eps, float, 0)
        if self.tau <= 0:
            raise ValueError(f"tau must be > 0, got {self.tau!r}")
        if self.target_update not in TARGET_UPDATES:
            raise ValueError(f"target_update must be one of {TARGET_UPDATES}, got {self.target_update!r}")
        for name, allowed in (("double_q", DOUBLE_Q), ("importance_weights", IMPORTANCE_WEIGHTS),
                              ("sequences", SEQUENCES), ("store_every", STORE_EVERY),
                              ("priority_mean", PRIORITY_MEANS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")

    @property
    def stride(self) -> int:
        return self.unroll - self.overlap

    @property
    def store_interval(self) -> int:
        """Regym's storage stores a window every this many steps: `overlap` ("overlap"; every step for overlap 0, as
        Regym's `overlap == 0 or ...`), or unroll - overlap ("stride")."""
        return max(self.overlap, 1) if self.store_every == "overlap" else self.stride

    @property
    def replay_sequences(self) -> int:
        return max(self.replay_capacity // self.stride, 1)

    @property
    def min_sequences(self) -> int:
        return max(math.ceil(self.min_capacity / self.stride), 1)

    @property
    def target_interval(self) -> int:
        """int(1 / tau), the reference's reading of tau (2500 for 4e-4, 500 for 0.002)."""
        return max(int(1 / self.tau), 1)


def actor_epsilons(n_actors: int, eps: float = 0.4, alpha: float = 2.0) -> np.ndarray:
    """Ape-X's per-actor epsilons eps^(1 + alpha i / (N - 1)), i = 0..N-1 (N = 1: eps). (N,) float64."""
    _check("n_actors", n_actors, int, 1)
    i = np.arange(n_actors, dtype=np.float64)
    return eps ** (1.0 + alpha * i / max(n_actors - 1, 1))


def epsilon_schedule(observations: int, final: np.ndarray, start: float = 1.0, decay: float = 3e4) -> np.ndarray:
    """eps_i(t) = final_i + (start - final_i) exp(-t / decay), t = observations so far (summed over actors)."""
    final = np.asarray(final, dtype=np.float64)
    return final + (start - final) * math.exp(-observations / decay)


def n_step_targets(rewards: Tensor, dones: Tensor, values: Tensor, gamma: float, n: int):
    """n-step returns bootstrapped on `values`: rewards, dones, values (B, T) (values[t] = Q_tgt(s_t, a*_t)).

    Returns (targets (B, T), has_target (B, T) bool): has_target is False where the bootstrap step t + n lies past
    the window and no terminal ends the return before it (the reference masks these last n steps).
    """
    b, t = rewards.shape
    pad = rewards.new_zeros(b, n)
    r = torch.cat([rewards, pad], dim=1)
    d = torch.cat([dones.to(rewards.dtype), pad], dim=1)
    v = torch.cat([values, pad], dim=1)
    alive = torch.ones_like(rewards)
    ret = torch.zeros_like(rewards)
    for k in range(n):
        ret = ret + (gamma ** k) * alive * r[:, k:k + t]
        alive = alive * (1.0 - d[:, k:k + t])
    ret = ret + (gamma ** n) * alive * v[:, n:n + t]
    inside = torch.arange(t, device=rewards.device) + n <= t - 1
    return ret, inside.unsqueeze(0) | (alive == 0)


def _inputs(steps: Mapping[str, Tensor]) -> dict[str, Tensor]:
    return {k: v for k, v in steps.items() if k not in ("action", "reward", "done", "valid")}


def to_tensors(arrays: Mapping[str, np.ndarray], device) -> dict[str, Tensor]:
    return {k: to_device(v, device) for k, v in arrays.items()}


class R2D2Learner:
    """The online and target networks, the Adam optimiser and the update counters.

    train(replay) -> the mean loss of the update (0-dim tensor on the device, detached). q_values(inputs, state)
    runs one acting step without gradient. `n_actors` only sets the faithful target-update counter.
    """

    def __init__(self, network: QNetwork, config: R2D2Config, n_actors: int, device: torch.device | str = "cpu"):
        _check("n_actors", n_actors, int, 1)
        self.config, self.n_actors, self.device = config, int(n_actors), torch.device(device)
        self.net = network.to(self.device)
        self.target = copy.deepcopy(self.net)
        for p in self.target.parameters():
            p.requires_grad_(False)
        for m in self.target.modules():  # a copy's LSTM weights lie apart: cuDNN would compact them at every call
            if isinstance(m, nn.RNNBase):
                m.flatten_parameters()
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=config.lr, betas=(0.9, 0.999),
                                          eps=config.adam_eps)
        self.updates = 0
        self.target_counter = 0
        self.target_copies = 0

    @torch.no_grad()
    def q_values(self, inputs: dict[str, Tensor], state: dict[str, Tensor]):
        return self.net.step(inputs, state)

    def loss(self, steps: dict[str, Tensor], state: dict[str, Tensor], weights: Tensor):
        """(loss 0-dim, priorities (B,), td_abs (B, T - burn_in), mask (B, T - burn_in)) for one batch of stored
        sequences: steps {input names, action, reward, done, valid: (B, T, ...)}, state {name: (B, ...)}."""
        q_taken, values = self._player_values(_inputs(steps), state, steps["action"], self._copies(steps["done"]))
        return self._td_loss(steps, q_taken, values, weights)

    def _copies(self, done: Tensor) -> Tensor | None:
        """(B, T) which steps of Regym's stored windows are padding copies of a terminal transition (every terminal
        after the first: replay.RegymSequenceBuilder); None with the aligned layout, which has none."""
        if self.config.sequences != "regym":
            return None
        return done & (done.long().cumsum(dim=1) > 1)

    def _player_values(self, inputs: dict[str, Tensor], state: dict[str, Tensor], action: Tensor,
                       copies: Tensor | None = None):
        """(Q(s_t, a_t) with gradient, Q_tgt(s_t, a*_t) without) (N, T - burn_in) of N sequences: the online network
        burnt in from the stored state, the target network from the same state, a* the online argmax.

        copies (N, T): Regym's copies of a terminal transition. A window holding any starts at its episode's start,
        from the zero state, and stores the state its terminal step acted from instead (replay.RegymSequenceBuilder);
        each copy's Q is the online network's one step from that state, as Regym's unroll re-reads the stored state
        after a terminal step (r2d2_loss.py L405-430 at 2ad02503). Their targets are the terminal reward, so their
        target values are never read."""
        c = self.config
        b = c.burn_in
        end = None
        if copies is not None:
            padded = copies.any(dim=1)
            end = state
            state = {k: torch.where(padded.view(-1, *([1] * (v.dim() - 1))), torch.zeros_like(v), v)
                     for k, v in state.items()}
        state_b = state
        if b:
            with torch.no_grad():
                _, state_b, _ = self.net({k: v[:, :b] for k, v in inputs.items()}, state)
        state_b = {k: v.detach() for k, v in state_b.items()}
        q, _, _ = self.net({k: v[:, b:] for k, v in inputs.items()}, state_b)
        with torch.no_grad():
            q_tgt, _, _ = self.target(inputs, state)
            q_tgt = q_tgt[:, b:]
            q_sel = q.detach()
            if c.double_q == "masked":
                legal = self.net.legal_mask(inputs["decision"][:, b:])
                q_sel = q_sel.masked_fill(~legal, float("-inf"))
            best = q_sel.argmax(dim=-1, keepdim=True)
            values = q_tgt.gather(-1, best).squeeze(-1)
        q_taken = q.gather(-1, action[:, b:].long().unsqueeze(-1)).squeeze(-1)
        if end is not None:  # computed for every sequence (no host sync), kept where there are copies
            q_end, _, _ = self.net({k: v[:, -1:] for k, v in inputs.items()}, end)  # a padded window ends in a copy
            q_end = q_end.gather(-1, action[:, -1:].long().unsqueeze(-1)).squeeze(-1)
            q_taken = torch.where(copies[:, b:], q_end, q_taken)
        return q_taken, values

    def _td_loss(self, steps: dict[str, Tensor], q_taken: Tensor, values: Tensor, weights: Tensor):
        c = self.config
        b = c.burn_in
        with torch.no_grad():
            y, has_target = n_step_targets(steps["reward"][:, b:].to(values.dtype), steps["done"][:, b:], values,
                                           c.gamma, c.n_step)
        valid = steps["valid"][:, b:]
        if c.sequences == "regym":
            # Regym trains the window's last n steps only where the step is itself terminal (r2d2_loss.py L1027 at
            # 2ad02503), not where a terminal ends the return inside the window
            t = valid.shape[1]
            last_n = torch.arange(t, device=valid.device) >= t - c.n_step
            mask = valid & (~last_n | steps["done"][:, b:])
        else:
            mask = valid & has_target
        td = y - q_taken
        loss = 0.5 * (weights.unsqueeze(1) * td.pow(2) * mask.to(td.dtype)).mean()
        td_abs = td.detach().abs()
        return loss, priority_mixture(td_abs, mask, c.eta, c.priority_mean), td_abs, mask

    def train(self, replay: PrioritizedSequenceReplay) -> Tensor:
        c = self.config
        self.optimizer.zero_grad(set_to_none=True)
        indices, priorities, losses = [], [], []
        for _ in range(c.n_minibatches):
            idx, steps, state, weights = replay.sample(c.batch_size)
            loss, prio, _, _ = self.loss(to_tensors(steps, self.device), to_tensors(state, self.device),
                                         to_device(weights, self.device))
            (loss / c.n_minibatches).backward()
            indices.append(idx)
            priorities.append(prio)
            losses.append(loss.detach())
        nn.utils.clip_grad_norm_(self.net.parameters(), c.grad_clip)
        self.optimizer.step()
        self.updates += 1
        self._update_target()
        replay.update_priorities(np.concatenate(indices), torch.cat(priorities))  # copied at the replay's next use
        return torch.stack(losses).mean()

    @torch.no_grad()
    def _update_target(self) -> None:
        c = self.config
        if c.target_update == "soft":
            for tp, p in zip(self.target.parameters(), self.net.parameters()):
                tp.lerp_(p, c.tau)
            for tb, b in zip(self.target.buffers(), self.net.buffers()):
                tb.copy_(b)
            return
        if c.target_update == "faithful":  # Regym copies once the counter passes the interval (dqn.py L382: >)
            self.target_counter += self.n_actors
            due = self.target_counter > c.target_interval
        else:  # the R2D2 paper's: every target_interval updates
            self.target_counter += 1
            due = self.target_counter >= c.target_interval
        if due:
            self.target.load_state_dict(self.net.state_dict())
            self.target_counter = 0
            self.target_copies += 1

    def state_dict(self) -> dict:
        return {"net": self.net.state_dict(), "target": self.target.state_dict(),
                "optimizer": self.optimizer.state_dict(), "updates": self.updates,
                "target_counter": self.target_counter, "target_copies": self.target_copies}

    def load_state_dict(self, state: Mapping) -> None:
        self.net.load_state_dict(state["net"])
        self.target.load_state_dict(state["target"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.updates, self.target_counter = int(state["updates"]), int(state["target_counter"])
        self.target_copies = int(state["target_copies"])


class VDNLearner(R2D2Learner):
    """R2D2 on a team of P players sharing one network (self-play), with value decomposition (VDN, Sunehag et al.
    2017): the team's Q is the sum of the players' Q, trained on the shared reward.

    Stored steps carry a player axis after time: inputs and action (B, T, P, ...), the team's reward, done and valid
    (B, T); states (B, P, ...). The players' sequences run through the network as B P sequences; then
    Q_team(s_t, a_t) = sum_p Q(s^p_t, a^p_t) and the n-step double-Q target bootstraps on
    sum_p Q_tgt(s^p_{t+n}, argmax_a Q(s^p_{t+n}, a)) (each player's own argmax, legal or not per `double_q`); loss,
    mask and priorities are R2D2's on the team's TD. With one player it is R2D2Learner. q_values takes the players
    flattened into the batch, as acting does."""

    def loss(self, steps: dict[str, Tensor], state: dict[str, Tensor], weights: Tensor):
        b, t, p = steps["action"].shape
        inputs = {k: v.transpose(1, 2).reshape(b * p, t, *v.shape[3:]) for k, v in _inputs(steps).items()}
        flat_state = {k: v.reshape(b * p, *v.shape[2:]) for k, v in state.items()}
        action = steps["action"].transpose(1, 2).reshape(b * p, t)
        copies = self._copies(steps["done"])
        copies = None if copies is None else copies.repeat_interleave(p, dim=0)  # the team's, for each player
        q_taken, values = self._player_values(inputs, flat_state, action, copies)
        team_q = q_taken.view(b, p, -1).sum(1)
        team_values = values.view(b, p, -1).sum(1)
        return self._td_loss(steps, team_q, team_values, weights)


@dataclass(frozen=True)
class ReconConfig:
    """The auxiliary reconstruction loss (section 4.4). Defaults: Table 2's (on, period 10, not adaptive); Table 4:
    period 2, adaptive, max_period 1000 (LSTM) or 200 (ESBN, DCEM), biasing on; Figure 6 "with rec": signals
    ("stimulus",), biasing on.

    Schedule (driven by reprobench.s2b.train): an update on every batch of newly finished episodes, and every
    `period` environment steps one on a random half of the last `store` finished episodes (the store size is not in
    the spec).
    """

    enabled: bool = True
    biasing: bool = True
    signals: tuple[str, ...] = SIGNALS
    weight: float = 1.0
    lr: float = 3e-4
    adam_eps: float = 1e-16
    hidden: int = 512
    threshold: float = 0.02
    period: int = 10
    adaptive: bool = False
    max_period: int = 1000
    store: int = 32
    stimulus_scale: str | None = None  # None: "unit" for the old Regym cores, "raw" for the Archi ones

    def __post_init__(self):
        if not self.signals or any(s not in SIGNALS for s in self.signals):
            raise ValueError(f"signals must be a non-empty subset of {SIGNALS}, got {self.signals!r}")
        if self.stimulus_scale is not None and self.stimulus_scale not in STIMULUS_SCALES:
            raise ValueError(f"stimulus_scale must be None or one of {STIMULUS_SCALES}, got {self.stimulus_scale!r}")
        for name in ("period", "max_period", "store", "hidden"):
            _check(name, getattr(self, name), int, 1)
        for name in ("weight", "lr", "adam_eps", "threshold"):
            _check(name, getattr(self, name), float, 0)


class Reconstruction:
    """Predictors of the listener's stimulus and channel from the agent's core, with their own Adam over the
    predictors and the whole agent (see the module docstring).

    update(inputs {name: (E, T, ...)}, valid (E, T)) trains on E whole episodes padded to T steps and returns
    {"loss", "stimulus_accuracy", "comm_accuracy"} as 0-dim device tensors (accuracies nan when undefined).
    """

    def __init__(self, network: QNetwork, config: ReconConfig, stimulus_dim: int, vocab_size: int, max_len: int,
                 stimulus_scale: str, device: torch.device | str = "cpu"):
        if stimulus_scale not in STIMULUS_SCALES:
            raise ValueError(f"stimulus_scale must be one of {STIMULUS_SCALES}, got {stimulus_scale!r}")
        self.config, self.net, self.device = config, network, torch.device(device)
        self.vocab_size, self.max_len, self.scale = vocab_size, max_len, stimulus_scale
        h = network.core.recon_dim
        dims = {"stimulus": stimulus_dim, "comm": max_len * (vocab_size + 1)}
        self.predictors = nn.ModuleDict({s: nn.Sequential(nn.Linear(h, config.hidden), nn.ReLU(),
                                                          nn.Linear(config.hidden, dims[s]))
                                         for s in config.signals}).to(self.device)
        self.optimizer = torch.optim.Adam([*self.predictors.parameters(), *network.parameters()], lr=config.lr,
                                          eps=config.adam_eps)
        self.period = config.period
        self.previous_accuracy = float("nan")
        self.calls = 0

    def losses(self, inputs: dict[str, Tensor], valid: Tensor):
        """(loss 0-dim, stimulus accuracy, comm accuracy) on E episodes (E, T, ...) from the zero state."""
        c = self.config
        e = valid.shape[0]
        state = self.net.initial_state(e)
        if c.biasing:
            _, _, feats = self.net(inputs, state, features=True)
        else:
            with torch.no_grad():
                _, _, feats = self.net(inputs, state, features=True)
        m = valid.to(feats.dtype)
        per_step = torch.zeros_like(m)
        nan = torch.full((), float("nan"), device=feats.device)
        stim_acc, comm_acc = nan, nan
        if "stimulus" in c.signals:
            x = inputs["stimulus"].float()
            target = (1.0 + x) / 2.0 if self.scale == "unit" else x
            pred = self.predictors["stimulus"](feats)
            per_step = per_step + c.weight * (pred - target).pow(2).mean(-1)
            close = ((pred.detach() - target).abs() <= c.threshold).to(m.dtype).mean(-1)
            stim_acc = (close * m).sum() / m.sum().clamp_min(1.0)
        if "comm" in c.signals:
            target = comm_one_hot(inputs["comm"], self.vocab_size)
            logits = self.predictors["comm"](feats)
            per_step = per_step + c.weight * F.binary_cross_entropy_with_logits(logits, target,
                                                                                reduction="none").mean(-1)
            tokens = inputs["comm"].long()
            hit = logits.detach().view(*tokens.shape, self.vocab_size + 1).argmax(-1) == tokens
            spoken = (tokens != 0).any(-1).to(m.dtype) * m
            comm_acc = (hit.to(m.dtype).mean(-1) * spoken).sum() / spoken.sum().clamp_min(1.0)
            comm_acc = torch.where(spoken.sum() > 0, comm_acc, nan)
        loss = (per_step * m).sum(1).mean()
        return loss, stim_acc, comm_acc

    def update(self, inputs: dict[str, Tensor], valid: Tensor) -> dict[str, Tensor]:
        loss, stim_acc, comm_acc = self.losses(inputs, valid)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return {"loss": loss.detach(), "stimulus_accuracy": stim_acc, "comm_accuracy": comm_acc}

    def adapt(self, accuracy: float) -> None:
        """The adaptive period (Table 4): up by max(1.125 p, p + 2) (at most max_period) when the accuracy is >= 95 %
        or >= 1.8 times the previous one; down to max(1, min(base, p // 4)) when it is <= 0.95 times the previous."""
        c = self.config
        if not c.adaptive or not math.isfinite(accuracy):
            return
        prev = self.previous_accuracy
        if accuracy >= 0.95 or (math.isfinite(prev) and accuracy >= 1.8 * prev):
            self.period = int(min(max(1.125 * self.period, self.period + 2), c.max_period))
        elif math.isfinite(prev) and accuracy <= 0.95 * prev:
            self.period = max(1, min(c.period, self.period // 4))
        self.previous_accuracy = accuracy

    def state_dict(self) -> dict:
        return {"predictors": self.predictors.state_dict(), "optimizer": self.optimizer.state_dict(),
                "period": self.period, "previous_accuracy": self.previous_accuracy, "calls": self.calls}

    def load_state_dict(self, state: Mapping) -> None:
        self.predictors.load_state_dict(state["predictors"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.period, self.previous_accuracy = int(state["period"]), float(state["previous_accuracy"])
        self.calls = int(state["calls"])
