"""Appendix D's samples (the learners' predictors worked out by hand, the stages, training untouched, exact resume)
and Appendix A's corpus lines."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from reprobench.calm import learners, models, samples, zoo
from reprobench.calm.online import run_online
from reprobench.calm.stream import Stream
from reprobench.calm.transformer import TransformerLearner, TransformerLM

V, T, B = 13, 5, 3


def tiny_stream(n_fragments=12):
    rng = np.random.default_rng(0)
    tokens = {c: rng.integers(0, V, 6000) for c in ("a", "b", "c")}
    return Stream(tokens, lam=60, seed=3, n_fragments=n_fragments, b=B, window=T, bptt=T)


def warm(learner, n=3, class_id=None):
    """A few batches of training, so that the hidden states and weights are not the initial ones."""
    g = torch.Generator().manual_seed(5)
    for _ in range(n):
        x = torch.randint(0, V, (T + 1, B), generator=g)
        learner.learn(x[:-1], x[1:], class_id)
    return learner


def next_inputs(n=4):
    return torch.randint(0, V, (n, 1, B), generator=torch.Generator().manual_seed(9))


def snapshot(learner):
    return copy.deepcopy(learner.state_dict())


def assert_unchanged(learner, before):
    after = learner.state_dict()

    def same(a, b):
        if isinstance(a, torch.Tensor):
            assert torch.equal(a, b)
        elif isinstance(a, dict):
            assert a.keys() == b.keys()
            for k in a:
                same(a[k], b[k])
        elif isinstance(a, list | tuple):
            assert len(a) == len(b)
            for u, v in zip(a, b):
                same(u, v)
        else:
            assert a == b

    same(before, after)


def test_single_learner_predicts_from_its_carried_state_in_eval_mode_and_changes_nothing():
    torch.manual_seed(0)
    model = models.LSTMLM(V, 6, 8, dropout=0.5)
    learner = warm(learners.SingleLearner(model, 0.01))
    before = snapshot(learner)
    xs = next_inputs()
    with learner.predictor() as step:
        got = [step(x) for x in xs]
    assert learner.model.training
    # by hand: the model in eval mode, fed the inputs one at a time from the carried state
    model.eval()
    state = learner.hidden
    with torch.no_grad():
        for x, g in zip(xs, got):
            out, state = model(x, state)
            torch.testing.assert_close(g, torch.log_softmax(out, -1))
    assert_unchanged(learner, before)


@pytest.mark.parametrize("kind, gate, objective", [("poe", "grad", "faithful"), ("moe", "lstm", "corrected"),
                                                   ("moe", "grad", "faithful")])
def test_mixture_predicts_the_distribution_its_objective_scores(kind, gate, objective):
    torch.manual_seed(0)
    n = 3
    experts = models.ExpertLSTMs(n, V, 6, 8, dropout=0.2)
    weights = models.GradientWeights(n) if gate == "grad" else models.LSTMWeights(V, n, 4, emsize=5)
    learner = warm(learners.MixtureLearner(experts, weights, kind, 0.01, gate_steps=2, moe_objective=objective))
    before = snapshot(learner)
    xs = next_inputs()
    with learner.predictor() as step:
        got = [step(x) for x in xs]
    assert learner.experts.training and learner.gate.training  # the modes are restored
    # by hand: every expert separately, then the combination
    experts.eval()
    weights.eval()
    state, gate_state = learner.hidden, learner.gate_hidden
    with torch.no_grad():
        for x, g in zip(xs, got):
            z, state = experts(x, state)  # (N, 1, b, V) logits
            if gate == "lstm":
                raw, gate_state = weights(x, gate_state)  # (N, 1, b)
            else:
                raw = weights().view(n, 1, 1).expand(n, 1, B)
            if kind == "poe":  # unnormalised plastic weights: sum_i w_i z_i
                expected = torch.log_softmax((raw.unsqueeze(-1) * z).sum(0), -1)
            else:
                pi = torch.softmax(raw, 0).unsqueeze(-1)
                log_p = torch.log_softmax(z, -1)
                if objective == "corrected":  # log sum_i pi_i p_i
                    expected = torch.log((pi * log_p.exp()).sum(0))
                else:  # normalised exp(sum_i pi_i log p_i)
                    expected = torch.log_softmax((pi * log_p).sum(0), -1)
            torch.testing.assert_close(g, expected)
    assert_unchanged(learner, before)


def test_ind_lstm_predicts_with_the_model_of_the_class_it_is_given():
    torch.manual_seed(0)
    learner = learners.PerClassLearner(lambda: models.LSTMLM(V, 6, 8), 0.01)
    warm(learner, class_id=0)
    warm(learner, class_id=1)
    x = next_inputs(1)[0]
    for c in (0, 1):
        with learner.predictor(c) as step, learner.learners[c].predictor() as own:
            torch.testing.assert_close(step(x), own(x))
    with pytest.raises(ValueError, match="class_id=2"):
        with learner.predictor(2):
            pass


def test_transformer_predicts_from_its_buffer_plus_what_it_was_fed():
    torch.manual_seed(0)
    learner = warm(TransformerLearner(TransformerLM(V, 8, 2, 1, 16, 0.1), 1e-3, context=7))
    before = snapshot(learner)
    xs = next_inputs(T + 3)
    with learner.predictor() as step:
        got = [step(x) for x in xs]
    learner.model.eval()
    with torch.no_grad():
        for i, g in enumerate(got):  # at most context = 7 tokens, the input length training used
            context = torch.cat([learner.buffer, *xs[:i + 1]])[-7:]
            torch.testing.assert_close(g, torch.log_softmax(learner.model(context)[-1:], -1))
    assert learner.buffer.shape[0] == 7
    assert_unchanged(learner, before)


def test_stages_straddle_the_first_long_switch_of_the_second_half():
    stream = tiny_stream()
    frags = stream.fragments
    got = samples.stages(stream)
    # the stage fragment: the first of the second half longer than 10 batches, else the longest there
    second = frags[len(frags) // 2:]
    new = next((f for f in second if f.n_batches > 10), max(second, key=lambda f: f.n_batches))
    old = frags[new.index - 1]
    expected = {old.first_batch + old.n_batches - 1: f"end of a {old.class_name} fragment",
                new.first_batch + new.n_batches - 1: f"end of the {new.class_name} fragment"}
    for k in (5, 10):
        if k < new.n_batches:
            expected[new.first_batch + k - 1] = f"{k} batches into a {new.class_name} fragment"
    assert got == expected and len(got) >= 2
    assert list(got.values())[0].startswith("end of a")  # the old fragment's end comes first


def test_decode():
    vocab = ["<unk>", "a", "b", " ", "cat"]
    assert samples.decode([1, 3, 2], vocab, "char") == "a b"
    assert samples.decode([4, 1, 0], vocab, "word") == "cat a <unk>"


@pytest.mark.parametrize("model", ["poe_pw_30", "ind_lstm"])
def test_sampling_leaves_training_bitwise_unchanged_and_survives_a_kill(tmp_path, model):
    stream = tiny_stream()
    vocab = [chr(ord("a") + i) for i in range(V)]

    def build():
        torch.manual_seed(0)
        return zoo.build(model, "multilingual", 10_000, V, "faithful", 0.02)

    plain = run_online(build(), stream, "cpu")
    sampler = samples.Sampler(samples.stages(stream), vocab, "char", seed=0)
    sampled = run_online(build(), stream, "cpu", sampler=sampler)
    assert np.array_equal(plain.loss, sampled.loss) and plain.samples == {}
    assert list(sampled.samples) == list(samples.stages(stream).values())
    assert all(len(text) == samples.SAMPLE_TOKENS["char"] and set(text) <= set(vocab)
               for text in sampled.samples.values())
    # killed half way (after the first stage's batch) and resumed: the same text
    ckpt = str(tmp_path / "run.pt")
    half = max(samples.stages(stream)) - 1
    run_online(build(), stream, "cpu", checkpoint=ckpt, identity={}, stop_after=half,
               sampler=samples.Sampler(samples.stages(stream), vocab, "char", seed=0))
    resumed = run_online(build(), stream, "cpu", checkpoint=ckpt, identity={},
                         sampler=samples.Sampler(samples.stages(stream), vocab, "char", seed=0))
    assert resumed.samples == sampled.samples and np.array_equal(resumed.loss, plain.loss)


def test_appendix_a_takes_the_first_non_empty_lines_of_every_class(tmp_path):
    split = tmp_path / "news_test"
    split.mkdir()
    (split / "news.test.fr.txt").write_text("\nBonjour.\nLe chat.\nLa suite.\n", encoding="utf-8")
    (split / "news.test.cs.txt").write_text("Dobrý den.\n", encoding="utf-8")
    out = tmp_path / "a.txt"
    samples.appendix_a({"multilingual": str(split)}, str(out), stand_in=True)
    assert out.read_text(encoding="utf-8") == ("SYNTHETIC STAND-IN: generated corpora, not the paper's.\n\n"
                                               "== multilingual (news_test) ==\n\n"
                                               "news.test.cs\nDobrý den.\n\n"
                                               "news.test.fr\nBonjour.\nLe chat.\n\n")
