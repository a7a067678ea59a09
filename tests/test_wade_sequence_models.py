"""Sequence models against specs/wade.md 3.4-3.5: sizes, parameter counts, masking, and the training loop."""

import numpy as np
import pytest
import torch

from reprobench.wade import sequence_models as sm
from reprobench.wade import tasks


@pytest.mark.parametrize("v, h, rnn, lstm, transformer", [
    (2, 62, 4218, 16494, 34692), (15, 180, 38175, 144555, 36785), (16, 186, 40936, 154768, 36946),
    (51, 358, 165447, 606861, 42581)])
def test_sizes_and_parameter_counts(v, h, rnn, lstm, transformer):
    assert sm.hidden_size(v) == h
    assert sm.n_parameters(sm.build("rnn", v, "default")) == rnn
    assert sm.n_parameters(sm.build("lstm", v, "default")) == lstm
    assert sm.n_parameters(sm.build("transformer", v, "faithful")) == transformer


def test_corrected_transformer_is_causal_and_faithful_is_not():
    torch.manual_seed(0)
    tokens = torch.tensor([[1, 2, 3, 4, 5, 6]])
    changed = tokens.clone()
    changed[0, 4:] = torch.tensor([7, 8])
    for variant, causal in (("corrected", True), ("faithful", False)):
        net = sm.build("transformer", 10, variant).eval()
        a, b = net(tokens), net(changed)
        same_before = torch.allclose(a[0, :4], b[0, :4], atol=1e-6)
        assert same_before == causal, variant  # outputs at 0..3 ignore later tokens only with the mask


def test_only_the_runs_of_the_grid_can_be_built():
    with pytest.raises(ValueError, match="rnn/faithful"):
        sm.build("rnn", 10, "faithful")  # RNN and LSTM have one configuration, 'default'
    with pytest.raises(ValueError, match="transformer/default"):
        sm.build("transformer", 10, "default")


def test_padding_does_not_change_a_sequence_output():
    torch.manual_seed(0)
    for model, variant in (("lstm", "default"), ("transformer", "faithful"), ("transformer", "corrected")):
        net = sm.build(model, 10, variant).eval()
        short = np.array([1, 2, 3])
        tokens, padding = sm._pad([short, np.array([4, 5, 6, 7, 8])], torch.device("cpu"))
        alone = net(torch.tensor(short[None]))
        assert torch.allclose(net(tokens, padding)[0, :3], alone[0], atol=1e-5), (model, variant)


def test_training_loop_counts_steps_and_learns():
    qa = tasks.generate(5, 12305, tasks.PAPER_MAX_SEQUENCES)
    small = tasks.Dataset(5, 12305, qa.vocabulary, qa.tokens[:300], qa.masks[:300], qa.train[:300])
    curve = sm.train(small, "lstm", 0, "default", epochs=2)
    assert len(curve) == 2 * int(small.train.sum()) // 8  # the 8-sequence counter runs across epochs
    assert np.all((curve >= 0) & (curve <= 1))
    again = sm.train(small, "lstm", 0, "default", epochs=2, max_steps=5)
    np.testing.assert_array_equal(again, curve[:5])  # same seed, same curve
