"""A user's recurrent core for S2B's Table 4 (docs/PLUGINS.md, "s2b"): a GRU cell in place of the Archi LSTM."""

import torch


class TinyGRUCore(torch.nn.Module):
    """h_t = GRU(x_t, h_{t-1}); the state is h alone."""

    def __init__(self, input_size: int, hidden: int = 16):
        super().__init__()
        self.cell = torch.nn.GRUCell(input_size, hidden)
        self.out_dim = hidden  # the width of h, what the dueling head reads

    def state_spec(self):
        return {"h": ((self.out_dim,), torch.float32)}  # zeros at an episode's start

    def forward(self, x, state):
        h = self.cell(x, state["h"].to(x.dtype))
        return h, {"h": h}


class WrongStateCore(TinyGRUCore):
    """Returns a state that does not match its state_spec: stops at the first step, naming the key."""

    def forward(self, x, state):
        h = self.cell(x, state["h"].to(x.dtype))
        return h, {"h": h[:, :4]}


class TanhRNNCore(torch.nn.Module):
    """h_t = tanh(W [x_t; h_{t-1}] + b), reconstruction reading [h; 2 h]: a Linear layer (whose PyTorch
    initialisation the benchmark must keep) and the optional recon_features."""

    def __init__(self, input_size: int):
        super().__init__()
        self.out_dim, self.recon_dim = 8, 16
        self.linear = torch.nn.Linear(input_size + 8, 8)

    def state_spec(self):
        return {"h": ((8,), torch.float32)}

    def forward(self, x, state):
        h = torch.tanh(self.linear(torch.cat([x, state["h"].to(x.dtype)], dim=-1)))
        return h, {"h": h}

    def recon_features(self, h, state):
        return torch.cat([h, 2 * h], dim=-1)
