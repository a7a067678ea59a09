"""ReCA: an elementary cellular automaton as a reservoir (specs/wade.md, section 3.1), all rules at once.

- 900 binary cells (15 blocks of 60), periodic boundary;
- rule k maps the neighbourhood (left, centre, right) to bit (4 left + 2 centre + right) of k (Wolfram);
- input: each token sets, in each block, one random cell per symbol ("one-to-one" projection, drawn with
  replacement, so two symbols can share a cell) and is XOR-ed into the state;
- after each token the rule is applied twice; the two states are the 1800 binary features; the second
  state carries to the next token; every sequence starts from zeros.

Tensors hold rules along dimension 0, so one call evolves every rule on the same inputs.
"""

from __future__ import annotations

import numpy as np
import torch

CELLS_PER_BLOCK = 60
BLOCKS = 15
STEPS = 2


def step(state: torch.Tensor, rules: torch.Tensor) -> torch.Tensor:
    """One CA update. state (rules, ..., cells) uint8 in {0, 1}; rules (rules,) rule numbers 0-255.

    Everything stays in uint8 (a rule number fits in a byte): the neighbourhood code 4 left + 2 centre + right
    selects the bit of the rule number."""
    left = torch.roll(state, 1, dims=-1)
    right = torch.roll(state, -1, dims=-1)
    code = (left << 2) | (state << 1) | right
    shape = (-1,) + (1,) * (state.dim() - 1)
    return (rules.to(torch.uint8).view(shape) >> code) & 1


def evolve(state: torch.Tensor, rules: torch.Tensor, steps: int) -> list[torch.Tensor]:
    """The states after each of `steps` updates."""
    out = []
    for _ in range(steps):
        state = step(state, rules)
        out.append(state)
    return out


def one_to_one_projection(vocab_size: int, rng: np.random.Generator | np.random.RandomState,
                          cells_per_block: int = CELLS_PER_BLOCK, blocks: int = BLOCKS) -> np.ndarray:
    """(vocab, cells) 0/1: in every block each symbol gets one cell, drawn independently with replacement."""
    projection = np.zeros((vocab_size, cells_per_block * blocks), dtype=np.uint8)
    for b in range(blocks):
        if isinstance(rng, np.random.RandomState):
            cells = rng.choice(cells_per_block, size=vocab_size)
        else:
            cells = rng.choice(cells_per_block, size=vocab_size, replace=True)
        projection[np.arange(vocab_size), b * cells_per_block + cells] = 1
    return projection


def features(tokens: torch.Tensor, projection: torch.Tensor, rules: torch.Tensor, steps: int = STEPS) -> torch.Tensor:
    """Reservoir features for a batch of equal-length sequences.

    tokens (batch, length) int64; projection (vocab, cells) uint8; rules (rules,) int64.
    Returns (rules, batch, length, steps * cells) uint8: the features after feeding each token.
    """
    batch, length = tokens.shape
    cells = projection.shape[1]
    state = torch.zeros((len(rules), batch, cells), dtype=torch.uint8, device=tokens.device)
    out = torch.empty((len(rules), batch, length, steps * cells), dtype=torch.uint8, device=tokens.device)
    for t in range(length):
        state = state ^ projection[tokens[:, t]].unsqueeze(0)
        states = evolve(state, rules, steps)
        out[:, :, t] = torch.cat(states, dim=-1)
        state = states[-1]
    return out
