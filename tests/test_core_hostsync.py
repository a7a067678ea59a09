"""The host-sync counter: which tensor calls it counts, and that it names the line."""

import torch

from reprobench.core.hostsync import HostSyncs


def test_counts_the_calls_that_sync_on_an_accelerator_and_names_their_lines():
    x = torch.arange(1.0, 4.0)
    with HostSyncs() as syncs:
        x.sum().item()  # a value read: 1
        if x.any():  # a Python branch on a tensor: 1
            pass
        x.cpu().numpy()  # one copy to the host: 1, not 2
        _ = x[x > 1]  # bool-mask indexing has a data-dependent size: 1
        torch.where(x > 1)  # one-argument where is nonzero: 1
        x.tolist()  # 1
    assert syncs.count == 6
    lines = sorted(int(point.split(":")[1].split()[0]) for point in syncs.points)
    assert len(set(lines)) == 6 and all("test_core_hostsync.py" in p for p in syncs.points)
    assert syncs.report(steps=2)["syncs_per_step"] == 3.0


def test_does_not_count_device_side_work():
    x, flags = torch.arange(6.0).reshape(2, 3), torch.tensor([True, False])
    with HostSyncs() as syncs:
        y = torch.where(flags[:, None], x, torch.zeros_like(x)).sum(1)  # three-argument where: elementwise
        y[torch.tensor([1, 0])] += 1  # integer-index put: no size depends on the data
        x.to("cpu")  # already on the CPU: no copy
        len(x)  # the shape, not the data
        torch.nan_to_num(y).clamp_(0, 5)
    assert syncs.count == 0, syncs.points


def test_torch_optims_host_side_step_counts_are_not_counted():
    """torch.optim.Adam reads its step counts (CPU tensors even when the parameters are on a GPU): no device sync."""
    weight = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.Adam([weight], lr=0.1)
    for _ in range(2):
        with HostSyncs() as syncs:
            opt.zero_grad()
            (weight ** 2).sum().backward()
            opt.step()
        assert syncs.count == 0, syncs.points
