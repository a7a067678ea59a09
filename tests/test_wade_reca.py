"""The CA reservoir against Wolfram's definitions and known evolutions."""

import numpy as np
import torch

from reprobench.wade import reca

# Wolfram's rule tables, written out by hand: neighbourhood (left, centre, right) -> new centre
RULE_TABLES = {
    30: {"111": 0, "110": 0, "101": 0, "100": 1, "011": 1, "010": 1, "001": 1, "000": 0},
    90: {"111": 0, "110": 1, "101": 0, "100": 1, "011": 1, "010": 0, "001": 1, "000": 0},
    110: {"111": 0, "110": 1, "101": 1, "100": 0, "011": 1, "010": 1, "001": 1, "000": 0},
}
# First rows from a single black cell (centre of 7 shown), from Wolfram's published pictures
KNOWN_ROWS = {
    30: ["0001000", "0011100", "0110010", "1101111"],
    90: ["0001000", "0010100", "0100010", "1010101"],
    110: ["0001000", "0011000", "0111000", "1101000"],
}


def by_hand(row: str, rule: int) -> str:
    n = len(row)
    return "".join(str(RULE_TABLES[rule][row[(i - 1) % n] + row[i] + row[(i + 1) % n]]) for i in range(n))


def test_rules_match_hand_tables_and_known_evolutions():
    width = 31
    start = np.zeros(width, dtype=np.uint8)
    start[width // 2] = 1
    rules = torch.tensor(list(RULE_TABLES), dtype=torch.int64)
    state = torch.tensor(np.stack([start] * len(rules)))
    rows = {r: ["".join(map(str, start))] for r in RULE_TABLES}
    for _ in range(12):
        state = reca.step(state, rules)
        for i, r in enumerate(RULE_TABLES):
            rows[r].append("".join(map(str, state[i].tolist())))
    for r in RULE_TABLES:
        for a, b in zip(rows[r], rows[r][1:]):
            assert b == by_hand(a, r)
        centre = [row[width // 2 - 3: width // 2 + 4] for row in rows[r][:4]]
        assert centre == KNOWN_ROWS[r], r


def test_all_256_rules_in_one_call_equal_one_at_a_time():
    rng = np.random.default_rng(0)
    state = torch.tensor(rng.integers(0, 2, size=(3, 50), dtype=np.uint8))
    rules = torch.arange(256)
    together = reca.step(state.unsqueeze(0).expand(256, -1, -1), rules)
    for r in (0, 30, 90, 110, 184, 255):
        assert torch.equal(together[r], reca.step(state.unsqueeze(0), torch.tensor([r]))[0])
    assert together[0].sum() == 0 and together[255].min() == 1


def test_one_to_one_projection_has_one_cell_per_symbol_per_block():
    p = reca.one_to_one_projection(5, np.random.RandomState(0))
    assert p.shape == (5, 900)
    assert (p.reshape(5, 15, 60).sum(-1) == 1).all()


def test_features_xor_injection_two_steps_and_zero_start():
    p = torch.tensor(reca.one_to_one_projection(3, np.random.RandomState(1)))
    tokens = torch.tensor([[0, 2, 1], [0, 2, 1]])
    rules = torch.tensor([90, 204])  # 204 is the identity
    f = reca.features(tokens, p, rules)
    assert f.shape == (2, 2, 3, 1800)
    # identity rule: the state is the running XOR of the projected tokens, twice
    expected = (p[0] ^ p[2] ^ p[1])
    assert torch.equal(f[1, 0, 2, :900], expected) and torch.equal(f[1, 0, 2, 900:], expected)
    # rule 90 at the first token: two updates of the projected first token
    s1 = reca.step(p[0].unsqueeze(0), torch.tensor([90]))
    assert torch.equal(f[0, 0, 0, :900], s1[0]) and torch.equal(f[0, 0, 0, 900:], reca.step(s1, torch.tensor([90]))[0])
    assert torch.equal(f[:, 0], f[:, 1])  # each sequence starts from zeros
