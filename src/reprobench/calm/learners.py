"""The online learners: lifelonglm's `BaseLearner.learn` step (specs/calm.md 3.2) for every model of Table 1.

Every learner has the same interface, which the online loop (reprobench.calm.online) drives and a user's own
learner may implement:

    learn(x, y, class_id=None) -> Tensor   the batch's mean cross-entropy (nats, 0-dim, detached, on the device,
                                           no host sync) computed BEFORE any update (test-then-train), then trains
    gate_weights() -> Tensor | None        the mixture weights used for the last batch, (N,) (mean over tokens and
                                           streams for an LSTM gate); None for a model without a gate
    on_fragment(index) -> None             called when fragment `index` starts; only the MoE warm-up uses it (the
                                           reference ends its warm-up at fragment 5)
    state_dict() / load_state_dict(state)  everything an exact resume needs (models, optimisers, hidden states)
    oracle: bool                           True only for Ind. LSTM, which is given the true class id
    to(device) (optional)                  moves it; learners are built on the CPU, so that the initial parameters
                                           do not depend on the device
    predictor(class_id=None) (optional)    a context manager giving step(x (1, b)) -> log-probabilities (1, b, V) of
                                           the next token, continuing from the learner's current state on a copy of
                                           it, in eval mode and without gradients; the learner is unchanged after
                                           it (Appendix D's samples, reprobench.calm.samples)

The step (3.2): from the saved (detached) state, predict and score; then `learn_iterations` (li) times: update, and,
unless it is the last pass, predict again from the saved state. The state carried to the next batch is the last
prediction's. Hidden states are never reset and are detached every window (truncated BPTT over bptt tokens).
Adam with default betas and a constant learning rate; gradient-norm clipping at 1.0.

Variants (docs/DEVIATIONS.md, CALM section):
- D5 `score_eval`: faithful computes the logged loss in train mode, dropout on, as the reference; corrected scores
  with an extra no-grad forward in eval mode, then trains as before (the carried state is the training pass's).
- D9 `restore_state` (mixtures): faithful re-predicts pass 2.. of li > 1 from the post-window hidden state of the
  experts (the reference's in-place bug: the window is processed twice in sequence); corrected restores the saved
  state, as the single-model learners do. The gate LSTM's state is restored in both (as the reference).
- D10 `moe_objective` (MoE): faithful -sum_i pi_i log p_i(y) (HEAD as coded), corrected -log sum_i pi_i p_i(y).
- D12 (Ensemble): the weights are FixedWeights' "one" (faithful, ACL era) or "mean" (corrected): set by the caller.
- C23 (the Transformer, reprobench.calm.transformer): `repeat_window`, the window appended again per re-prediction.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from reprobench.calm.models import (
    ExpertLSTMs,
    FixedWeights,
    GradientWeights,
    LSTMWeights,
    detach_hidden,
    expand_weights,
    moe_loss_corrected,
    moe_loss_faithful,
    poe_logits,
)

CLIP = 1.0  # --clip, never overridden in any command line


def _cross_entropy(out: Tensor, y: Tensor, log_probs: bool) -> Tensor:
    """The criterion of a single model: CrossEntropyLoss on logits, or NLLLoss on log-probabilities (MoS)."""
    out = out.reshape(-1, out.shape[-1])
    return F.nll_loss(out, y.reshape(-1)) if log_probs else F.cross_entropy(out, y.reshape(-1))


def _adam(params, lr: float) -> torch.optim.Adam:
    return torch.optim.Adam([p for p in params if p.requires_grad], lr=lr)


class SingleLearner:
    """One language model (Large LSTM, MoS, a user's model): `model(x, hidden) -> (out (T, b, V), hidden)` with
    `out` logits (or log-probabilities when `log_probs`, MoS), `hidden` None at the start. Adam over all its
    parameters, clip_grad_norm_ 1.0 over them."""

    oracle = False

    def __init__(self, model: nn.Module, lr: float, learn_iterations: int = 1, score_eval: bool = False,
                 log_probs: bool = False, clip: float | None = CLIP):
        if learn_iterations < 1:
            raise ValueError(f"learn_iterations must be at least 1, got {learn_iterations}")
        self.model, self.li, self.score_eval, self.log_probs, self.clip = model, learn_iterations, score_eval, \
            log_probs, clip
        self.optimizer = _adam(model.parameters(), lr)
        self.hidden = None
        model.train()

    def _score_eval(self, x: Tensor, y: Tensor) -> Tensor:
        self.model.eval()
        with torch.no_grad():
            out, _ = self.model(x, self.hidden)
            loss = _cross_entropy(out, y, self.log_probs)
        self.model.train()
        return loss

    def learn(self, x: Tensor, y: Tensor, class_id: int | None = None) -> Tensor:
        state = self.hidden
        first = self._score_eval(x, y) if self.score_eval else None
        out, new_state = self.model(x, state)
        loss = _cross_entropy(out, y, self.log_probs)
        if first is None:
            first = loss.detach()
        for it in range(self.li):
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if self.clip is not None:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
            self.optimizer.step()
            if it < self.li - 1:  # every pass starts from the saved state, with the updated parameters
                out, new_state = self.model(x, state)
                loss = _cross_entropy(out, y, self.log_probs)
        self.hidden = detach_hidden(new_state)
        return first

    def gate_weights(self) -> Tensor | None:
        return None

    def on_fragment(self, index: int) -> None:
        pass

    @contextmanager
    def predictor(self, class_id: int | None = None):
        state = self.hidden

        def step(x: Tensor) -> Tensor:
            nonlocal state
            out, state = self.model(x, state)
            return out if self.log_probs else torch.log_softmax(out, -1)

        with evaluating(self.model):
            yield step

    def to(self, device) -> SingleLearner:
        self.model.to(device)  # in place: the optimizer keeps its parameters
        return self

    def state_dict(self) -> dict:
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(), "hidden": self.hidden}

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.hidden = state["hidden"]


class PerClassLearner:
    """Ind. LSTM (3.4), an oracle: one SingleLearner per class id (its own model, Adam and hidden state), created
    from `factory()` when the class is first seen, so that a class's state resumes where its text stopped."""

    oracle = True

    def __init__(self, factory, lr: float, learn_iterations: int = 1, score_eval: bool = False):
        self.factory, self.lr, self.li, self.score_eval = factory, lr, learn_iterations, score_eval
        self.learners: dict[int, SingleLearner] = {}
        self.device = torch.device("cpu")

    def _learner(self, class_id: int) -> SingleLearner:
        if class_id not in self.learners:  # lazily, as the reference: torch's generator draws at first sight
            model = self.factory().to(self.device)
            self.learners[class_id] = SingleLearner(model, self.lr, self.li, self.score_eval)
        return self.learners[class_id]

    def to(self, device) -> PerClassLearner:
        self.device = torch.device(device)
        for learner in self.learners.values():
            learner.to(device)
        return self

    def learn(self, x: Tensor, y: Tensor, class_id: int | None = None) -> Tensor:
        if class_id is None:
            raise ValueError("Ind. LSTM is an oracle: learn() needs the true class id")
        return self._learner(int(class_id)).learn(x, y)

    def gate_weights(self) -> Tensor | None:
        return None

    def on_fragment(self, index: int) -> None:
        pass

    @contextmanager
    def predictor(self, class_id: int | None = None):
        """The model of `class_id` (the oracle's), which must have been seen."""
        if class_id is None or int(class_id) not in self.learners:
            raise ValueError(f"Ind. LSTM predicts with a seen class's model, got class_id={class_id}")
        with self.learners[int(class_id)].predictor() as step:
            yield step

    def state_dict(self) -> dict:
        # creation order matters for the torch generator of classes still to come: keep it
        return {"classes": list(self.learners), "learners": [lrn.state_dict() for lrn in self.learners.values()]}

    def load_state_dict(self, state: dict) -> None:
        self.learners = {}
        with torch.random.fork_rng(devices=[]):  # the throw-away inits must not move the restored generator
            for class_id in state["classes"]:
                self._learner(int(class_id))
        for learner, sub in zip(self.learners.values(), state["learners"], strict=True):
            learner.load_state_dict(sub)


@contextmanager
def evaluating(*modules: nn.Module):
    """Eval mode (dropout off) and no gradients inside; the previous modes restored after."""
    modes = [m.training for m in modules]
    try:
        for m in modules:
            m.eval()
        with torch.no_grad():
            yield
    finally:
        for m, mode in zip(modules, modes):
            m.train(mode)


def clip_per_expert(experts: ExpertLSTMs, max_norm: float) -> None:
    """clip_grad_norm_(module i's parameters, max_norm) for every expert i at once: each expert's gradient norm over
    all its slices, scaled by min(1, max_norm / (norm + 1e-6)) as torch does (the reference clips each module
    separately, not the mixture as a whole)."""
    grads = [p.grad for p in experts.parameters() if p.grad is not None]
    n = experts.n_experts
    norms = torch.stack([g.reshape(n, -1).pow(2).sum(1) for g in grads]).sum(0).sqrt()
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view((n,) + (1,) * (g.dim() - 1)))


class MixtureLearner:
    """PoE, Ensemble and MoE (3.6, 3.7), with a fixed, plastic ("+PW", GradientWeights) or LSTM gate.

    kind "poe": the experts' raw logits z_i combined as sum_i w_i z_i, cross-entropy (w unnormalised unless
    `normalize`, the reference's --weight-normalization). kind "moe": experts output log-softmaxes, pi = softmax
    over experts, loss per `moe_objective` (D10).
    Order per batch (3.6): forward all experts; gate weights; score; update the experts on the loss with w
    detached (one Adam over all experts, clipping per expert); update the gate on the detached pre-update expert
    outputs: k = `gate_steps` Adam steps (lr `gate_lr`) for the plastic gate, one step for the LSTM gate, none for
    fixed weights or a single expert. Gate state (Adam moments, weights) is never reset.
    MoE warm-up (`warmup` fragments, 3.7): uniform weights 1/N and no gate training during fragments
    0 .. warmup - 1; when fragment `warmup` starts, the real gate takes over and the experts' Adam is re-created
    (its moments reset), as HEAD does."""

    oracle = False

    def __init__(self, experts: ExpertLSTMs, gate: nn.Module, kind: str, lr: float, learn_iterations: int = 1,
                 gate_steps: int = 1, gate_lr: float = 1e-3, normalize: bool = False, clear_gate_hidden: bool = False,
                 warmup: int = 0, moe_objective: str = "faithful", restore_state: bool = False,
                 score_eval: bool = False):
        if kind not in ("poe", "moe"):
            raise ValueError(f"kind must be 'poe' or 'moe', not {kind!r}")
        if moe_objective not in ("faithful", "corrected"):
            raise ValueError(f"moe_objective must be 'faithful' or 'corrected', not {moe_objective!r}")
        if learn_iterations < 1:
            raise ValueError(f"learn_iterations must be at least 1, got {learn_iterations}")
        if isinstance(gate, LSTMWeights | GradientWeights) and gate.normalize:
            raise ValueError("build the gate unnormalised: the learner applies the softmax (normalize=True)")
        self.experts, self.gate, self.kind, self.lr, self.li = experts, gate, kind, lr, learn_iterations
        self.normalize = normalize or kind == "moe"  # the MoE always softmaxes its gate (3.7)
        self.gate_steps, self.clear_gate_hidden, self.warmup = gate_steps, clear_gate_hidden, warmup
        self.moe_objective, self.restore_state, self.score_eval = moe_objective, restore_state, score_eval
        self.optimizer = _adam(experts.parameters(), lr)
        trainable = [p for p in gate.parameters() if p.requires_grad]
        self.gate_optimizer = torch.optim.Adam(trainable, lr=gate_lr) if trainable else None
        self.uniform = FixedWeights(experts.n_experts, "mean").to(experts.decoder_weight.device)
        self.warming = warmup > 0
        self.hidden = None
        self.gate_hidden = None
        self.last_weights: Tensor | None = None
        experts.train()

    # --- prediction --------------------------------------------------------------------------------------------
    def _expert_outputs(self, x: Tensor, state):
        z, new_state = self.experts(x, state)
        return (torch.log_softmax(z, -1) if self.kind == "moe" else z), new_state

    def _weights(self, x: Tensor, gate_state):
        """(raw gate output, its normalised form or None, new gate state). Raw: (N,) or (N, T, b)."""
        if self.warming:
            return self.uniform(), None, gate_state
        if isinstance(self.gate, LSTMWeights):
            if self.clear_gate_hidden:
                gate_state = None
            raw, gate_state = self.gate(x, gate_state)
        else:
            raw = self.gate()
        if isinstance(self.gate, FixedWeights) or not self.normalize:
            return raw, None, gate_state
        return raw, torch.log_softmax(raw, 0), gate_state

    def _loss(self, z: Tensor, raw: Tensor, log_w: Tensor | None, y: Tensor) -> Tensor:
        w = raw if log_w is None else log_w.exp()
        if self.kind == "poe":
            out = poe_logits(z, w)
            return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        if self.moe_objective == "corrected":
            return moe_loss_corrected(z, w if log_w is None else None, y, log_pi=log_w)
        return moe_loss_faithful(z, w, y)

    @staticmethod
    def _detached(raw: Tensor, log_w: Tensor | None):
        return raw.detach(), (None if log_w is None else log_w.detach())

    # --- the step ----------------------------------------------------------------------------------------------
    def _score_eval(self, x: Tensor, y: Tensor) -> Tensor:
        self.experts.eval()
        with torch.no_grad():
            z, _ = self._expert_outputs(x, self.hidden)
            raw, log_w, _ = self._weights(x, self.gate_hidden)
            loss = self._loss(z, raw, log_w, y)
        self.experts.train()
        return loss

    def learn(self, x: Tensor, y: Tensor, class_id: int | None = None) -> Tensor:
        state, gate_state = self.hidden, self.gate_hidden
        first = self._score_eval(x, y) if self.score_eval else None
        z, new_state = self._expert_outputs(x, state)
        raw, log_w, new_gate_state = self._weights(x, gate_state)
        loss = self._loss(z, *self._detached(raw, log_w), y)  # the experts' loss: gate weights detached
        if first is None:
            first = loss.detach()
        self.last_weights = (raw if log_w is None else log_w.exp()).detach()
        for it in range(self.li):
            self._train_experts(loss)
            self._train_gate(x, z.detach(), raw, log_w, gate_state, y)
            if it < self.li - 1:
                # D9: the reference's mixtures re-predict from the post-window expert state (faithful)
                z, new_state = self._expert_outputs(x, state if self.restore_state else detach_hidden(new_state))
                raw, log_w, new_gate_state = self._weights(x, gate_state)
                loss = self._loss(z, *self._detached(raw, log_w), y)
        self.hidden = detach_hidden(new_state)
        self.gate_hidden = None if new_gate_state is None else detach_hidden(new_gate_state)
        return first

    def _train_experts(self, loss: Tensor) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip_per_expert(self.experts, CLIP)
        self.optimizer.step()

    def _train_gate(self, x: Tensor, z: Tensor, raw: Tensor, log_w: Tensor | None, gate_state, y: Tensor) -> None:
        if self.warming or self.gate_optimizer is None or self.experts.n_experts == 1:
            return
        if isinstance(self.gate, LSTMWeights):  # one step on the weights of this window's prediction
            self.gate_optimizer.zero_grad(set_to_none=True)
            self._loss(z, raw, log_w, y).backward()
            self.gate_optimizer.step()
            return
        for _ in range(self.gate_steps):  # the plastic gate: k steps on the current batch
            self.gate_optimizer.zero_grad(set_to_none=True)
            raw, log_w, _ = self._weights(x, None)
            self._loss(z, raw, log_w, y).backward()
            self.gate_optimizer.step()

    @contextmanager
    def predictor(self, class_id: int | None = None):
        """Next-token log-probabilities as the objective scores them: PoE log_softmax(sum_i w_i z_i); MoE
        log sum_i pi_i p_i (corrected) or log_softmax(sum_i pi_i log p_i) (faithful, D10's geometric mixture)."""
        state, gate_state = self.hidden, self.gate_hidden

        def step(x: Tensor) -> Tensor:
            nonlocal state, gate_state
            z, state = self._expert_outputs(x, state)
            raw, log_w, gate_state = self._weights(x, gate_state)
            w = raw if log_w is None else log_w.exp()
            if self.kind == "moe" and self.moe_objective == "corrected":
                log_pi = torch.log(w) if log_w is None else log_w
                return torch.logsumexp(expand_weights(log_pi, z) + z, dim=0)
            return torch.log_softmax(poe_logits(z, w), -1)

        with evaluating(self.experts, self.gate):
            yield step

    def gate_weights(self) -> Tensor | None:
        if self.last_weights is None:
            return None
        w = self.last_weights
        return w.reshape(w.shape[0], -1).mean(1) if w.dim() > 1 else w

    def to(self, device) -> MixtureLearner:
        for module in (self.experts, self.gate, self.uniform):
            module.to(device)
        return self

    def on_fragment(self, index: int) -> None:
        if self.warming and index >= self.warmup:
            self.warming = False
            self.optimizer = _adam(self.experts.parameters(), self.lr)  # HEAD re-creates the experts' Adam

    def state_dict(self) -> dict:
        return {"experts": self.experts.state_dict(), "gate": self.gate.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "gate_optimizer": None if self.gate_optimizer is None else self.gate_optimizer.state_dict(),
                "hidden": self.hidden, "gate_hidden": self.gate_hidden, "warming": self.warming,
                "last_weights": self.last_weights}

    def load_state_dict(self, state: dict) -> None:
        self.experts.load_state_dict(state["experts"])
        self.gate.load_state_dict(state["gate"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.gate_optimizer is not None:
            self.gate_optimizer.load_state_dict(state["gate_optimizer"])
        self.hidden, self.gate_hidden = state["hidden"], state["gate_hidden"]
        self.warming, self.last_weights = bool(state["warming"]), state["last_weights"]
