"""PPO with the Nature CNN and the standard Atari details, in one module in the style of CleanRL's ppo_atari.py,
written for the AMTLB calling convention (the benchmark owns the episode loop and calls `act` once per agent step).

Network: 84x84x4 uint8 frames / 255 -> conv 32 8x8/4 -> conv 64 4x4/2 -> conv 64 3x3/1 -> linear 3136->512, ReLU after
each; an actor head (18 logits) and a critic head (1 value). Orthogonal init, gain sqrt(2) in the trunk, 0.01 for the
actor, 1 for the critic, zero biases.

Learning: rollouts of `num_steps` agent steps per slot; GAE(gamma, lambda) advantages bootstrapped from the value of
the observation after the rollout; `update_epochs` epochs over `num_minibatches` shuffled minibatches; per-minibatch
advantage normalisation; clipped surrogate, clipped value loss, entropy bonus; gradient norm clipping; Adam with the
learning rate annealed linearly to 0 over the run's updates (CleanRL: the k-th update, k = 0, 1, ..., uses
lr * (1 - k / total_updates), total_updates = total_steps // num_steps). Rewards are clipped to their sign here, in
the learner only: the benchmark passes raw scores.

Calling convention: `act(obs_t, r, starts)` receives the reward `r` of the action chosen at the previous call and
`starts`, whether obs_t begins a new episode (so that action ended one). The call first stores (r, starts) as the
outcome of the previous step; when that completes a rollout, it bootstraps from obs_t's value and updates; then it
chooses the action for obs_t (with the updated weights) and opens the next step of the rollout with it.

Randomness comes from one torch.Generator per agent on its device (action sampling and minibatch shuffles) and a
CPU generator for the initialisation, both seeded by `seed`: CPU runs are bit-identical for a seed.

Host synchronisation on an accelerator: an agent step waits for the device once, to read the actions the emulators
need; the observations and rewards go up through pinned memory without waiting, the actions are sampled without
torch.multinomial's validity checks (two reads), and the update reads nothing back (torch.optim.Adam's step counts
live on the host). The CPU results are the same bits as with torch.multinomial (tests/test_amtlb_ppo.py).
"""

from __future__ import annotations

import io
import math
import os

import numpy as np
import torch
from torch import Tensor, nn

from reprobench.amtlb.api import Architecture
from reprobench.core import atomic

N_ACTIONS = 18  # the full action space: every game shares it
OBS_SHAPE = (4, 84, 84)
ROLLOUT = ("obs", "actions", "logprobs", "values", "rewards", "dones")


def _orthogonal(layer: nn.Module, gain: float, generator: torch.Generator) -> nn.Module:
    nn.init.orthogonal_(layer.weight, gain, generator=generator)
    nn.init.zeros_(layer.bias)
    return layer


class NatureCNN(nn.Module):
    """The actor-critic of Mnih et al. (2015) as PPO uses it: a shared trunk, policy logits and a value."""

    def __init__(self, n_actions: int = N_ACTIONS, generator: torch.Generator | None = None):
        super().__init__()
        g = generator if generator is not None else torch.Generator().manual_seed(0)
        with torch.random.fork_rng(devices=[]):  # the layers' default init draws from the global RNG: leave it be
            relu = math.sqrt(2)
            self.trunk = nn.Sequential(
                _orthogonal(nn.Conv2d(4, 32, 8, stride=4), relu, g), nn.ReLU(),
                _orthogonal(nn.Conv2d(32, 64, 4, stride=2), relu, g), nn.ReLU(),
                _orthogonal(nn.Conv2d(64, 64, 3, stride=1), relu, g), nn.ReLU(),
                nn.Flatten(),
                _orthogonal(nn.Linear(64 * 7 * 7, 512), relu, g), nn.ReLU())
            self.actor = _orthogonal(nn.Linear(512, n_actions), 0.01, g)
            self.critic = _orthogonal(nn.Linear(512, 1), 1.0, g)
        self.to(memory_format=torch.channels_last)  # a third faster convolution backward on CPU (oneDNN), same values

    def forward(self, obs: Tensor) -> tuple[Tensor, Tensor]:
        """(B, 4, 84, 84) uint8 -> logits (B, n_actions), values (B,)."""
        # in the weights' dtype: float32, or float64 where the GPU check compares devices
        hidden = self.trunk(obs.contiguous(memory_format=torch.channels_last).to(self.critic.weight.dtype) / 255.0)
        return self.actor(hidden), self.critic(hidden).squeeze(-1)


def gae(rewards: Tensor, values: Tensor, dones: Tensor, last_value: Tensor, gamma: float, lam: float
        ) -> tuple[Tensor, Tensor]:
    """Advantages and returns (T, N) of a rollout. rewards, values, dones (T, N): dones[t] = 1 when the transition at
    step t ended its episode (so nothing after it is bootstrapped); last_value (N,): the value of the observation after
    the last step."""
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(last_value)
    for t in reversed(range(rewards.shape[0])):
        next_value = last_value if t == rewards.shape[0] - 1 else values[t + 1]
        live = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_value * live - values[t]
        running = delta + gamma * lam * live * running
        advantages[t] = running
    return advantages, advantages + values


def ppo_losses(logits: Tensor, actions: Tensor, old_logprobs: Tensor, advantages: Tensor, values: Tensor,
               old_values: Tensor, returns: Tensor, clip: float, normalize_advantages: bool = True,
               clip_value: bool = True) -> dict[str, Tensor]:
    """The terms of PPO's loss on a minibatch: `policy` (the clipped surrogate, to minimise), `value` (half the
    squared error, clipped around the old values), `entropy` (mean policy entropy), and the diagnostics `approx_kl`
    (the (r - 1) - log r estimator) and `clip_fraction`."""
    log_probs = torch.log_softmax(logits, -1)
    new_logprobs = log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    entropy = -(log_probs.exp() * log_probs).sum(-1).mean()
    if normalize_advantages:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    log_ratio = new_logprobs - old_logprobs
    ratio = log_ratio.exp()
    policy = torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip, 1 + clip)).mean()
    if clip_value:
        clipped = old_values + (values - old_values).clamp(-clip, clip)
        value = 0.5 * torch.max((values - returns) ** 2, (clipped - returns) ** 2).mean()
    else:
        value = 0.5 * ((values - returns) ** 2).mean()
    with torch.no_grad():
        approx_kl = ((ratio - 1) - log_ratio).mean()
        clip_fraction = ((ratio - 1).abs() > clip).float().mean()
    return {"policy": policy, "value": value, "entropy": entropy, "approx_kl": approx_kl,
            "clip_fraction": clip_fraction}


def _seeds(seed: int) -> tuple[int, int]:
    init, sampler = np.random.SeedSequence(int(seed)).generate_state(2, dtype=np.uint64)
    return int(init) >> 1, int(sampler) >> 1  # manual_seed takes a non-negative int64


class PPO(Architecture):
    """PPO on the AMTLB architecture API. Every hyperparameter is a keyword with the standard Atari value (CleanRL's
    ppo_atari.py: clip fixed at 0.1)."""

    def __init__(self, num_envs: int, seed: int, device: str = "cpu", total_steps: int | None = None, *,
                 learning_rate: float = 2.5e-4, anneal_lr: bool = True, num_steps: int = 128, gamma: float = 0.99,
                 gae_lambda: float = 0.95, num_minibatches: int = 4, update_epochs: int = 4,
                 norm_adv: bool = True, clip_coef: float = 0.1, clip_vloss: bool = True, ent_coef: float = 0.01,
                 vf_coef: float = 0.5, max_grad_norm: float = 0.5, adam_eps: float = 1e-5):
        if num_envs * num_steps % num_minibatches:
            raise ValueError(f"num_minibatches={num_minibatches} must divide num_envs * num_steps = "
                             f"{num_envs} * {num_steps}")
        self.num_envs, self.seed, self.total_steps = int(num_envs), int(seed), total_steps
        self.device = torch.device(device)
        self.hparams = dict(learning_rate=learning_rate, anneal_lr=anneal_lr, num_steps=num_steps, gamma=gamma,
                            gae_lambda=gae_lambda, num_minibatches=num_minibatches, update_epochs=update_epochs,
                            norm_adv=norm_adv, clip_coef=clip_coef, clip_vloss=clip_vloss, ent_coef=ent_coef,
                            vf_coef=vf_coef, max_grad_norm=max_grad_norm, adam_eps=adam_eps)
        for name, value in self.hparams.items():
            setattr(self, name, value)
        # CleanRL's num_iterations = total_timesteps // batch_size, with total_timesteps over all slots
        self.total_updates = max(1, total_steps // num_steps) if total_steps else None
        init_seed, sampler_seed = _seeds(seed)
        self.net = NatureCNN(N_ACTIONS, torch.Generator().manual_seed(init_seed)).to(self.device)
        self.sampler = torch.Generator(device=self.device).manual_seed(sampler_seed)
        self._reset_learning()

    # -- learning state -----------------------------------------------------------------------------------------------
    def _reset_learning(self) -> None:
        """A fresh optimiser, an empty rollout, the schedule at its start."""
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=self.learning_rate, eps=self.adam_eps)
        T, N, dev = self.num_steps, self.num_envs, self.device
        self.obs = torch.zeros((T, N, *OBS_SHAPE), dtype=torch.uint8, device=dev)
        self.actions = torch.zeros((T, N), dtype=torch.int64, device=dev)
        self.logprobs, self.values, self.rewards, self.dones = (torch.zeros((T, N), device=dev) for _ in range(4))
        self.step = 0  # rollout steps opened (an action chosen); step - 1 awaits its reward while step > 0
        self.updates = 0
        self.last_losses: dict[str, Tensor] = {}

    def current_lr(self) -> float:
        """The learning rate of the next update."""
        if not self.anneal_lr or self.total_updates is None:
            return self.learning_rate
        return self.learning_rate * max(0.0, 1.0 - self.updates / self.total_updates)

    # -- the API ------------------------------------------------------------------------------------------------------
    def act(self, observations: np.ndarray, rewards: np.ndarray, episode_starts: np.ndarray) -> np.ndarray:
        obs = self._upload(observations)
        if self.step > 0:  # the outcome of the previous call's actions
            t = self.step - 1
            outcome = self._upload(np.stack([np.sign(rewards), episode_starts]), self.rewards.dtype)
            self.rewards[t], self.dones[t] = outcome[0], outcome[1]
            if self.step == self.num_steps:
                self._update(obs)
                self.step = 0
        with torch.no_grad():
            logits, value = self.net(obs)
            log_probs = torch.log_softmax(logits, -1)
            action = self._sample(log_probs.exp())
            s = self.step
            self.obs[s] = obs
            self.actions[s] = action.squeeze(-1)
            self.logprobs[s] = log_probs.gather(-1, action).squeeze(-1)
            self.values[s] = value
        self.step += 1
        return action.squeeze(-1).cpu().numpy()  # the agent step's one wait: the emulators need the actions

    def _upload(self, array: np.ndarray, dtype: torch.dtype | None = None) -> Tensor:
        """`array` on the device. On an accelerator through pinned memory without waiting: a copy from pageable memory
        makes the host wait for the device's queue."""
        host = torch.as_tensor(array, dtype=dtype)
        return host if self.device.type == "cpu" else host.pin_memory().to(self.device, non_blocking=True)

    def _sample(self, probs: Tensor) -> Tensor:
        """One action per row of `probs` (B, 1): what torch.multinomial(probs, 1) draws, bit for bit (its one-sample
        path: the argmax of probs / q, q ~ Exp(1) from the same generator), without its two validity checks that
        read the device."""
        return (probs / torch.empty_like(probs).exponential_(1, generator=self.sampler)).argmax(-1, keepdim=True)

    def _order(self, n: int) -> Tensor:
        """A minibatch shuffle of the rollout's n samples (a method: the GPU check replays the CPU's)."""
        return torch.randperm(n, generator=self.sampler, device=self.device)

    def _update(self, next_obs: Tensor) -> None:
        with torch.no_grad():
            _, last_value = self.net(next_obs)
            advantages, returns = gae(self.rewards, self.values, self.dones, last_value, self.gamma, self.gae_lambda)
        for group in self.optimizer.param_groups:
            group["lr"] = self.current_lr()
        batch = self.num_steps * self.num_envs
        size = batch // self.num_minibatches
        b_obs = self.obs.reshape(batch, *OBS_SHAPE)
        b_actions, b_logprobs = self.actions.reshape(-1), self.logprobs.reshape(-1)
        b_advantages, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), self.values.reshape(-1)
        for _ in range(self.update_epochs):
            order = self._order(batch)
            for start in range(0, batch, size):
                idx = order[start:start + size]
                logits, values = self.net(b_obs[idx])
                terms = ppo_losses(logits, b_actions[idx], b_logprobs[idx], b_advantages[idx], values, b_values[idx],
                                   b_returns[idx], self.clip_coef, self.norm_adv, self.clip_vloss)
                loss = terms["policy"] - self.ent_coef * terms["entropy"] + self.vf_coef * terms["value"]
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(self.net.parameters(), self.max_grad_norm)
                self.optimizer.step()
        self.updates += 1
        self.last_losses = {k: v.detach() for k, v in terms.items()}  # the last minibatch's, for logging

    def clone(self) -> PPO:
        twin = PPO(self.num_envs, self.seed, str(self.device), self.total_steps, **self.hparams)
        twin.load_state_dict(self.state_dict())
        return twin

    def save(self, path: str | os.PathLike) -> None:
        # torch.save names its zip archive after the file it writes: into memory it is always "archive", so the
        # bytes do not depend on the (temporary) file name
        buffer = io.BytesIO()
        torch.save({k: v.detach().cpu() for k, v in self.net.state_dict().items()}, buffer)
        atomic.write_bytes(path, buffer.getvalue())

    def load(self, path: str | os.PathLike) -> None:
        weights = torch.load(path, map_location=self.device, weights_only=True)
        self.net.load_state_dict(weights)
        self._reset_learning()

    def state_dict(self) -> dict:
        s = self.step
        return {"num_envs": self.num_envs, "hparams": dict(self.hparams), "total_steps": self.total_steps,
                "net": {k: v.detach().cpu().clone() for k, v in self.net.state_dict().items()},
                "optimizer": _to_cpu(self.optimizer.state_dict()), "sampler": self.sampler.get_state(),
                "step": s, "updates": self.updates,
                "rollout": {name: getattr(self, name)[:s].cpu().clone() for name in ROLLOUT}}

    def load_state_dict(self, state: dict) -> None:
        if int(state["num_envs"]) != self.num_envs or dict(state["hparams"]) != self.hparams:
            raise ValueError(f"the state belongs to a PPO with num_envs={state['num_envs']} and {state['hparams']}, "
                             f"not num_envs={self.num_envs} and {self.hparams}")
        self.total_steps = state["total_steps"]
        self.total_updates = max(1, self.total_steps // self.num_steps) if self.total_steps else None
        self.net.load_state_dict(state["net"])
        self._reset_learning()
        self.optimizer.load_state_dict(state["optimizer"])
        self.sampler.set_state(state["sampler"])
        self.step, self.updates = int(state["step"]), int(state["updates"])
        for name in ROLLOUT:
            getattr(self, name)[:self.step] = state["rollout"][name].to(self.device)


def _to_cpu(value):
    if isinstance(value, Tensor):
        return value.detach().cpu().clone()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(v) for v in value)
    return value
