"""The S2B cores as the originals ran them (issue 25 items 8-11; DEVIATIONS S24-S27): memory reads worked out by hand
for the faithful (Archi's zero slots, Regym's DNC interface) and the corrected variants, and the initialisation."""

import math

import pytest
import torch
from torch import nn

from reprobench.s2b import cores, train


def _uniform_identity_attention(att: nn.MultiheadAttention) -> None:
    """Zero query and key projections (every score 0, so uniform attention over the unmasked keys), identity value
    and output projections, zero biases: each output row is the mean of the unmasked value rows."""
    e = att.embed_dim
    with torch.no_grad():
        att.in_proj_weight.zero_()
        att.in_proj_weight[2 * e:] = torch.eye(e)
        att.in_proj_bias.zero_()
        att.out_proj.weight.copy_(torch.eye(e))
        att.out_proj.bias.zero_()


# -- ESBN (item 9) ----------------------------------------------------------------------------------------------------
def _esbn(empty_slots: str) -> cores.ESBNCore:
    core = cores.ESBNCore(2, 2, 2, 2, 2, capacity=4, recon_slots=1, empty_slots=empty_slots)
    with torch.no_grad():
        core.gate.weight.zero_()
        core.gate.bias.zero_()  # sigmoid(g) = 1/2 whatever the controller says
        core.confidence.weight.fill_(1.0)
        core.confidence.bias.zero_()  # conf_n = sigmoid(sim_n)
    return core


@pytest.mark.parametrize("empty_slots, expected", [
    # Archi: slots [zero slot 0; (k1, v1)], similarities [0, v1 . z] = [0, ln 3], softmax [1/4, 3/4]; confidences
    # [sigmoid(0), sigmoid(ln 3)] = [1/2, 3/4]; read = 1/2 (1/4 [0, 0, 1/2] + 3/4 [1, 2, 3/4])
    #                                            = 1/2 [3/4, 3/2, 1/8 + 9/16] = [0.375, 0.75, 0.34375]
    ("eligible", [0.375, 0.75, 0.34375]),
    # the written slot only: softmax [1]; read = 1/2 [1, 2, 3/4]
    ("masked", [0.5, 1.0, 0.375]),
])
def test_esbn_two_slot_read_with_and_without_archis_zero_slot(empty_slots, expected):
    core = _esbn(empty_slots)
    state = core.initial_state(1)
    state["mem_v"][0, 0] = torch.tensor([1.0, 0.0])
    state["mem_k"][0, 0] = torch.tensor([1.0, 2.0])
    state["count"][0] = 1
    z = torch.tensor([[math.log(3.0), 0.0]])
    with torch.no_grad():
        _, new = core(z, state)
    torch.testing.assert_close(new["read"][0], torch.tensor(expected))
    # and the write comes after the read: (k_t, z_t) lands in slot 1
    assert int(new["count"]) == 2 and torch.equal(new["mem_v"][0, 1], z[0])


@pytest.mark.parametrize("empty_slots", cores.EMPTY_SLOTS)
def test_esbn_reads_nothing_at_the_first_step(empty_slots):
    # Archi's not_first_mask: no read while the memory holds only its zero slot (else 1/2 [0, 0, sigmoid(0)])
    core = _esbn(empty_slots)
    with torch.no_grad():
        _, new = core(torch.tensor([[1.0, 1.0]]), core.initial_state(1))
    assert torch.count_nonzero(new["read"]) == 0


# -- DCEM (item 8) ----------------------------------------------------------------------------------------------------
def _dcem(empty_slots: str, topk: int = 2) -> cores.DCEMCore:
    """obs and comm encodings of 1, flags 1 (entries of 2), one head, top-k 2, ring of 4."""
    core = cores.DCEMCore(3, 1, 1, 1, query=2, heads=1, topk=topk, lstm=2, fc=(2, 2), capacity=4,
                          empty_slots=empty_slots)
    for att in (*core.att_obs, *core.att_comm):
        _uniform_identity_attention(att)
    return core


S3 = math.sqrt(3.0)


@pytest.mark.parametrize("count, empty_slots, expected", [
    # keys k1 = [1, sqrt 3], k2 = [-1, sqrt 3]: cosines to q = [1, 0] of 1/2 and -1/2; values v1 = [2, 0], v2 = [0, 4].
    # Archi: its zero slot 0 (cosine 0) beats k2 for the top 2: [k1, 0], weights 1 / (1 - cos) = [2, 1] -> [2/3, 1/3];
    # the attention's 2 outputs are both the mean of [4/3 v1/2, 0] and are summed: 2/3 v1 = [4/3, 0]
    (2, "eligible", [4 / 3, 0.0]),
    # written slots only: [k1, k2], weights [2, 1/(3/2)] -> [3/4, 1/4]: outputs the mean of [3/4 v1, 1/4 v2] =
    # [0.75, 0.5], twice: [1.5, 1.0]
    (2, "masked", [1.5, 1.0]),
    # one entry written (k1, v1): Archi pads the memory [zero slot; k1] to the top 2: the same [k1, 0] pick: [4/3, 0]
    (1, "eligible", [4 / 3, 0.0]),
    # the empty pick is masked in the attention and left out of the sum: v1 alone, weight 1: [2, 0]
    (1, "masked", [2.0, 0.0]),
])
def test_dcem_top_k_with_an_empty_slot(count, empty_slots, expected):
    core = _dcem(empty_slots)
    keys = torch.zeros(1, 4, 2)
    values = torch.zeros(1, 4, 2)
    keys[0, :2] = torch.tensor([[1.0, S3], [-1.0, S3]])
    values[0, :2] = torch.tensor([[2.0, 0.0], [0.0, 4.0]])
    with torch.no_grad():
        read = core._read(torch.tensor([[1.0, 0.0]]), keys, values, torch.tensor([count]), core.att_obs)
    torch.testing.assert_close(read[0], torch.tensor(expected))


@pytest.mark.parametrize("empty_slots", cores.EMPTY_SLOTS)
def test_dcem_writes_before_it_reads_through_a_linear_query(empty_slots):
    """The first step, z = [obs 3, comm 1, flag -1]: the entries [3, -1] (obs) and [1, -1] (comm) are written first.
    The comm query is Linear(ReLU(Linear(.))) with the first layer's output fixed at [1, 0] and the second W = I,
    b = [0, -1]: q = [1, -1] (a ReLU after it would give [1, 0]), parallel to the comm entry (cosine 1). The read of
    the obs memory: weight 1 / 1e-8 on the step's own entry against 1 / 1 on Archi's zero slot: [3, -1] (to 1e-8);
    the comm entry alone when masked: [3, -1]. Reading before writing would find an empty memory (a zero read)."""
    core = _dcem(empty_slots)
    first, second = core.query_comm.layers
    with torch.no_grad():
        first.weight.zero_()
        first.bias.copy_(torch.tensor([1.0, 0.0]))
        second.weight.copy_(torch.eye(2))
        second.bias.copy_(torch.tensor([0.0, -1.0]))
        _, new = core(torch.tensor([[3.0, 1.0, -1.0]]), core.initial_state(1))
    read_obs = new["features"][0, 2:4]  # features = [previous h (2); read_obs (2); read_comm (2); z (3)]
    torch.testing.assert_close(read_obs, torch.tensor([3.0, -1.0]))
    assert int(new["count"]) == 1 and torch.equal(new["mem_comm"][0, 0], torch.tensor([1.0, -1.0]))


@pytest.mark.parametrize("empty_slots", cores.EMPTY_SLOTS)
def test_dcem_equal_cosines_at_the_k_th_place_go_to_the_lower_slot(empty_slots):
    """Slots 0 and 2 hold the same key (an entry written twice) with different values, and tie for the second of the
    top 2. q = [1, 0]; keys [1, sqrt 3] (slots 0, 2: cosine 1/2), [0.8, 0.6] (slot 1: 0.8), [-1, 0] (slot 3: -1);
    Archi's zero entry (cosine 0) loses too. The picks: slot 1 and slot 0 (the lower), weights 1 / (1 - cos) = [5, 2]
    -> [5/7, 2/7]; the attention's 2 outputs are both the mean of [5/7 v1, 2/7 v0], summed: 5/7 [7, 7] + 2/7 [7, 0] =
    [7, 5] (slot 2's [0, 14] would give [5, 9]). The CPU's torch.topk took slot 2 here; CUDA's breaks ties its own
    way, which made the DCEM's float64 learner updates differ by 0.3 between an H100 and the CPU."""
    core = _dcem(empty_slots)
    keys = torch.tensor([[[1.0, S3], [0.8, 0.6], [1.0, S3], [-1.0, 0.0]]])
    values = torch.tensor([[[7.0, 0.0], [7.0, 7.0], [0.0, 14.0], [100.0, 100.0]]])
    with torch.no_grad():
        read = core._read(torch.tensor([[1.0, 0.0]]), keys, values, torch.tensor([4]), core.att_obs)
    torch.testing.assert_close(read[0], torch.tensor([7.0, 5.0]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("method", ["sort", "threshold", None])
def test_top_k_lowest_index_is_the_stable_sorts_first_k(method, dtype):
    """Ties everywhere (5 distinct values in rows of 30): the picks and their order are the stable descending sort's,
    whichever way they are computed."""
    scores = torch.randint(0, 5, (8, 3, 30), generator=torch.Generator().manual_seed(0)).to(dtype) / 4
    for k in (1, 6, 30):
        top, idx = cores.top_k_lowest_index(scores, k, method)
        want_top, want_idx = torch.sort(scores, dim=-1, descending=True, stable=True)
        assert torch.equal(top, want_top[..., :k]) and torch.equal(idx, want_idx[..., :k])


def test_dcem_layers_as_configured_and_one_attention_module_per_head():
    layout = cores.ActionLayout("combined", 2, 4, 3)
    dims = cores.InputDims(3, 4, 3, 2, layout.n_actions)
    net = cores.build_network(cores.NetConfig(core="dcem"), dims, layout)
    core = net.core
    # non_linearities ['ReLU', None]: the query's 126 and the output's 256 are linear
    assert core.query_comm.relu == core.query_obs.relu == core.fc.relu == [True, False]
    assert core.query_comm.out_dim == 126 and core.fc.out_dim == 256
    # 3 heads x 2 directions; one MultiheadAttention(42): in_proj 3 x 42 x 42 + 126, out_proj 42 x 42 + 42 = 7224
    assert len(core.att_obs) == len(core.att_comm) == 3
    assert sum(p.numel() for p in core.att_obs.parameters()) == 3 * 7224


def test_parameter_counts():
    """The cores' sizes are the originals' (A = 171, stimulus 3, V = 4); against the counts before issue 25 only
    the DCEM changed: 4 more attention modules, 4 x 7224 = 28,896 parameters (3,693,372 before)."""
    layout = cores.ActionLayout("combined", 2, 4, 3)
    dims = cores.InputDims(3, 4, 3, 2, layout.n_actions)
    counts = {core: sum(p.numel() for p in cores.build_network(cores.NetConfig(core=core), dims, layout).parameters())
              for core in cores.CORES}
    assert counts == {"lstm": 1_013_292, "archi_lstm": 1_677_520, "esbn": 3_790_107, "dcem": 3_693_372 + 28_896,
                      "dnc": 720_345}


# -- DNC (item 10) ----------------------------------------------------------------------------------------------------
def test_dnc_usage_step_with_regyms_floor():
    """3 slots, previous usage [0, 1/2, 1], previous write weights [0.2, 0, 0], one read head with free gate 1/2 that
    read [0, 0.4, 0]: retention psi = 1 - 1/2 [0, 0.4, 0] = [1, 0.8, 1].
    Regym: floored u = 0.005 + 0.995 [0, 0.5, 1] = [0.005, 0.5025, 1]; u + w - u w = [0.204, 0.5025, 1];
    times psi: [0.204, 0.402, 1]. Allocation (increasing usage): a = [1 - 0.204, (1 - 0.402) 0.204, 0]
    = [0.796, 0.121992, 0]. Graves et al.: [0.2, 0.5, 1] psi = [0.2, 0.4, 1]; a = [0.8, 0.6 x 0.2, 0]
    = [0.8, 0.12, 0]."""
    usage, write_w = torch.tensor([[0.0, 0.5, 1.0]]), torch.tensor([[0.2, 0.0, 0.0]])
    read_w, free = torch.tensor([[[0.0, 0.4, 0.0]]]), torch.tensor([[0.5]])
    regym = cores.dnc_usage(usage, write_w, read_w, free, cores.USAGE_FLOOR)
    paper = cores.dnc_usage(usage, write_w, read_w, free, 0.0)
    torch.testing.assert_close(regym, torch.tensor([[0.204, 0.402, 1.0]]))
    torch.testing.assert_close(paper, torch.tensor([[0.2, 0.4, 1.0]]))
    torch.testing.assert_close(cores.dnc_allocation(regym), torch.tensor([[0.796, 0.121992, 0.0]]))
    torch.testing.assert_close(cores.dnc_allocation(paper), torch.tensor([[0.8, 0.12, 0.0]]))
    # at an episode's start (usage 0, nothing written or read) every slot is in use 0.005: allocation 0.995 0.005^j
    start = cores.dnc_usage(torch.zeros(1, 3), torch.zeros(1, 3), torch.zeros(1, 1, 3), free, cores.USAGE_FLOOR)
    torch.testing.assert_close(cores.dnc_allocation(start), torch.tensor([[0.995, 0.995 * 0.005, 0.995 * 0.005 ** 2]]))


def _dnc(interface: str) -> cores.DNCCore:
    """Slots 3 of width 2, 1 read head; interface weights 0, so the interface is its bias: keys and write vector 1,
    strengths 0, gates +20 (sigmoid 1 - 2e-9), everything else 0."""
    core = cores.DNCCore(2, (4,), slots=3, width=2, reads=1, out=2, recon="hidden", recon_slots=1,
                         interface=interface)
    bias = torch.cat([torch.ones(2), torch.zeros(1), torch.ones(2), torch.zeros(1), torch.zeros(2), torch.ones(2),
                      torch.full((2,), 20.0), torch.zeros(1), torch.zeros(3)])  # Regym's order (module docstring)
    with torch.no_grad():
        core.interface.weight.zero_()
        core.interface.bias.copy_(bias)
    return core


@pytest.mark.parametrize("interface, key, strength, row0", [
    # Regym: tanh(1) = 0.761594, softplus(0) = ln 2; at the first step the floored usage allocates 0.995 to slot 0:
    # memory row 0 = 0.995 tanh(1) [1, 1] = 0.757786 [1, 1]
    ("regym", math.tanh(1.0), math.log(2.0), 0.995 * math.tanh(1.0)),
    # Graves et al.: raw 1, 1 + ln 2; usage 0 allocates all of slot 0: row 0 = [1, 1]
    ("paper", 1.0, 1.0 + math.log(2.0), 1.0),
])
def test_dnc_interface_and_first_write(interface, key, strength, row0):
    core = _dnc(interface)
    with torch.no_grad():
        i = core.read_interface(torch.zeros(1, 4))
        _, new = core(torch.zeros(1, 2), core.initial_state(1))
    torch.testing.assert_close(i.read_keys, torch.full((1, 1, 2), key))
    torch.testing.assert_close(i.write_key, torch.full((1, 1, 2), key))
    torch.testing.assert_close(i.write_vec, torch.full((1, 2), key))
    torch.testing.assert_close(i.read_str, torch.full((1, 1), strength))
    torch.testing.assert_close(i.write_str, torch.full((1, 1), strength))
    torch.testing.assert_close(new["memory"][0, 0], torch.full((2,), row0))


# -- initialisation (item 11) -----------------------------------------------------------------------------------------
def _full(core: str, seed: int = 0):
    layout = cores.ActionLayout("combined", 2, 4 if core in cores.ARCHI_CORES else 6, 3)
    dims = cores.InputDims(3, layout.vocab_size, 3, 2, layout.n_actions)
    torch.manual_seed(seed)
    return cores.build_network(cores.NetConfig(core=core), dims, layout)


def _orthonormal_columns(w: torch.Tensor, scale: float = 1.0) -> None:
    w = w if w.shape[0] >= w.shape[1] else w.T
    torch.testing.assert_close(w.T @ w / scale ** 2, torch.eye(w.shape[1]), atol=1e-4, rtol=0)


def test_archi_initialisation():
    net = _full("esbn")
    core = net.core
    # kaiming-normal (fan_out, ReLU gain sqrt 2) x sqrt 2: std 2 / sqrt(fan_out). The gate 256 -> 1: std 2 (PyTorch's
    # default: U(-1/16, 1/16), std 0.036); the key 256 -> 256: 0.125; sample sds within 4 standard errors
    assert abs(float(core.gate.weight.detach().std()) - 2.0) < 4 * 2.0 / math.sqrt(2 * 256)
    assert abs(float(core.key.weight.detach().std()) - 0.125) < 4 * 0.125 / math.sqrt(2 * 256 * 256)
    # the obs encoder's first layer 3 -> 64: sd 2 / 8 (192 weights, standard error 0.013)
    assert abs(float(net.encoder.obs.layers[0].weight.detach().std()) - 2 / 8) < 0.05
    # biases U(-0.08, 0.08): the 256 key biases fill the interval
    for b in (core.key.bias, core.out.bias, net.encoder.comm.layers[1].bias):
        assert b.abs().max() <= 0.08 and b.abs().max() > 0.07
    # LSTM cells: kaiming-normal x 1 with fan_out = 4 x 512: std sqrt(2 / 2048) = 0.03125; biases U(-0.08, 0.08)
    w = core.out_lstm.weight_ih
    assert abs(float(w.detach().std()) - 0.03125) < 4 * 0.03125 / math.sqrt(2 * w.numel())
    assert 0.07 < core.out_lstm.bias_hh.abs().max() <= 0.08
    # the dueling head is Regym's DuelingLayer: Xavier-uniform (bound sqrt(6 / (1185 + 171)) = 0.0665), zero biases
    bound = math.sqrt(6 / (1185 + 171))
    assert 0.95 * bound < net.head.advantage.weight.abs().max() <= bound
    assert torch.count_nonzero(net.head.advantage.bias) == torch.count_nonzero(net.head.value.bias) == 0


def test_dcem_attention_keeps_pytorchs_initialisation():
    att = _full("dcem").core.att_obs[0]
    # xavier-uniform in_proj (bound sqrt(6 / (42 + 126)) = 0.189), zero biases; Archi's kaiming x sqrt 2 would give an
    # sd of 2 / sqrt(126) = 0.178 and many weights beyond the bound
    assert att.in_proj_weight.abs().max() <= math.sqrt(6 / 168)
    assert torch.count_nonzero(att.in_proj_bias) == torch.count_nonzero(att.out_proj.bias) == 0


def test_regym_initialisation():
    net = _full("lstm")
    # FCBody: Xavier-uniform, zero biases; the critic's first layer 1197 -> 512: bound sqrt(6 / 1709) = 0.0593
    first = net.encoder.critic.layers[0]
    bound = math.sqrt(6 / (1197 + 512))
    assert 0.95 * bound < first.weight.abs().max() <= bound and torch.count_nonzero(first.bias) == 0
    # LSTMs: orthogonal weights (512 x 256 and 512 x 128: orthonormal columns), zero biases
    lstm = net.core.layers[0]
    _orthonormal_columns(lstm.weight_ih_l0)
    _orthonormal_columns(lstm.weight_hh_l0)
    assert torch.count_nonzero(lstm.bias_ih_l0) == torch.count_nonzero(lstm.bias_hh_l0) == 0
    dnc = _full("dnc").core
    # the interface (173 x 128) orthogonal x 1e-3; the output's controller part (128 x 128) orthogonal x 1e-3, its
    # reads' part (128 x 64) Xavier-uniform unscaled (bound sqrt(6 / 192) = 0.177), zero biases
    _orthonormal_columns(dnc.interface.weight, 1e-3)
    _orthonormal_columns(dnc.output.weight[:, :128], 1e-3)
    reads = dnc.output.weight[:, 128:]
    assert 0.95 * math.sqrt(6 / 192) < reads.abs().max() <= math.sqrt(6 / 192)
    assert torch.count_nonzero(dnc.interface.bias) == torch.count_nonzero(dnc.output.bias) == 0
    _orthonormal_columns(dnc.controller.layers[1].weight_hh_l0)


# -- variants ---------------------------------------------------------------------------------------------------------
def test_variants_reach_the_cores_through_the_config():
    faithful = train.TrainConfig(net=cores.tiny_net("dcem"))
    assert (faithful.net.empty_slots, faithful.net.dnc_interface) == ("eligible", "regym")
    fixed = train.corrected(faithful)
    assert (fixed.net.empty_slots, fixed.net.dnc_interface, fixed.net.dnc_recon) == ("masked", "paper", "hidden")
    assert train.corrected(train.small(train.preset("fig6_dnc"))).net.dnc_interface == "paper"
    assert train.small(train.corrected(train.preset("table4_esbn"))).net.empty_slots == "masked"
    layout = cores.ActionLayout("decision", 2, 4, 3)
    dims = cores.InputDims(3, 4, 3, 2, layout.n_actions)
    assert cores.build_network(fixed.net, dims, layout).core.zero_slots is False
    assert cores.build_network(cores.tiny_net("esbn"), dims, layout).core.zero_slot is True
    assert cores.build_network(cores.tiny_net("dnc", dnc_interface="paper"), dims, layout).core.regym is False
    with pytest.raises(ValueError, match="empty_slots"):
        cores.NetConfig(empty_slots="none")
    with pytest.raises(ValueError, match="dnc_interface"):
        cores.NetConfig(dnc_interface="deepmind")


def test_the_heads_attention_is_each_heads_own_multihead_attention_module():
    """_self_attention runs the 3 heads' modules at once: the same as calling each (a key padding mask for the keys
    the read could not fill)."""
    torch.manual_seed(0)
    atts = nn.ModuleList(nn.MultiheadAttention(5, 1, batch_first=True) for _ in range(3))
    for att in atts:
        nn.init.normal_(att.in_proj_bias)
        nn.init.normal_(att.out_proj.bias)
    seq, ok = torch.randn(4, 3, 6, 5), torch.rand(4, 3, 6) < 0.7
    ok[..., 0] = True
    with torch.no_grad():
        batched = cores._self_attention(atts, seq, ok)
        for h, att in enumerate(atts):
            one, _ = att(seq[:, h], seq[:, h], seq[:, h], key_padding_mask=~ok[:, h], need_weights=False)
            torch.testing.assert_close(batched[:, h], one)
