"""The batched trainer: equal to separate runs, resumable, NaN runs ended like the reference."""

import contextlib

import numpy as np
import pytest
import torch

from reprobench.arith import train as trainer
from reprobench.arith.grid import Pack, Setting

SETTING = Setting("operations", "nalu", "mul", 20, 2, 0.5, 0.25, (1.0, 2.0), (2.0, 6.0))
PAPER = {"batch_size": 128, "learning_rate": 1e-3}  # the paper's batch and Adam step size
CFG = trainer.TrainConfig(iterations=300, eval_every=50, validation_size=500, test_size=500, **PAPER)
CFG64 = trainer.TrainConfig(iterations=300, eval_every=50, validation_size=500, test_size=500, dtype="float64", **PAPER)


@contextlib.contextmanager
def killed_after_optimizer_steps(monkeypatch, steps: int):
    """A training run inside the block is killed (KeyboardInterrupt) when Adam is about to take step `steps` + 1,
    as a preempted job would be (conftest's helper for torch.optim.Adam, here for the trainer's FusedAdam)."""
    real_step, calls = trainer.FusedAdam.step, {"n": 0}

    def dying_step(self):
        calls["n"] += 1
        if calls["n"] > steps:
            raise KeyboardInterrupt("killed")
        return real_step(self)

    monkeypatch.setattr(trainer.FusedAdam, "step", dying_step)
    try:
        with pytest.raises(KeyboardInterrupt):
            yield
    finally:
        monkeypatch.setattr(trainer.FusedAdam, "step", real_step)


def test_fused_adam_equals_torch_adam():
    """FusedAdam takes the steps of torch.optim.Adam(fused=True), bit for bit, and resumes from its state."""
    torch.manual_seed(0)
    start = [torch.randn(3, 2, 5), torch.randn(3, 1, 2)]
    ours = [p.clone().requires_grad_() for p in start]
    theirs = [p.clone().requires_grad_() for p in start]
    mine, ref = trainer.FusedAdam(ours, 1e-3), torch.optim.Adam(theirs, lr=1e-3, fused=True)
    for step in range(5):
        for params, opt in ((ours, mine), (theirs, ref)):
            opt.zero_grad()
            sum(((p - step) ** 3).sum() for p in params).backward()
            opt.step()
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b)
    again = trainer.FusedAdam([p.detach().clone().requires_grad_() for p in ours], 1e-3)
    again.load_state_dict(mine.state_dict())
    assert [float(s) for s in again.steps] == [5.0, 5.0]


def _values(curve, split, metric):
    return np.array([v for s, m, v in zip(curve["split"], curve["metric"], curve["value"])
                     if (s, m) == (split, metric)])


@pytest.mark.parametrize("model", ["nalu", "nac_mul", "nac_add", "linear"])
def test_batched_gradients_equal_separate_gradients(model):
    """One step at the paper's size: each seed's gradient in the batched model is its own model's gradient."""
    setting = Setting("operations", model, "mul", 100, 2, 0.5, 0.25, (1.0, 2.0), (2.0, 6.0))
    cfg = trainer.TrainConfig(iterations=0, eval_every=1000, validation_size=10_000, test_size=10_000,
                              dtype="float64", **PAPER)
    cpu = torch.device("cpu")

    def grads(seeds):
        batch = trainer.SeedBatch(setting, seeds, cfg, cpu)
        net = trainer.BatchedNetwork(model, 100, 2, seeds, torch.float64)
        x, t = batch.batch(7)
        ((net(x) - t) ** 2).mean(1).sum().backward()
        return {name: p.grad for name, p in net.named_parameters()}

    batched = grads([0, 1, 2, 3])
    for i, seed in enumerate([0, 1, 2, 3]):
        alone = grads([seed])
        for name, g in alone.items():
            np.testing.assert_allclose(batched[name][i].numpy(), g[0].numpy(), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("model, operation, input_size, rtol", [
    ("nalu", "mul", 20, 1e-9), ("nac_add", "add", 20, 1e-9), ("linear", "sub", 20, 1e-9),
    # NAC* on mul is chaotic early on (losses of thousands): a 1-ulp difference grows 1e12-fold in 30 steps at
    # n = 20. CPU elementwise kernels round an element differently (by 1 ulp) depending on whether it falls in a
    # SIMD block or the scalar tail, i.e. on the tensor's size, so only a calmer setting stays close for 300 steps.
    ("nac_mul", "mul", 4, 1e-4),
])
def test_batched_training_equals_separate_runs(model, operation, input_size, rtol):
    setting = Setting("operations", model, operation, input_size, 2, 0.5, 0.25, (1.0, 2.0), (2.0, 6.0))
    batched, _ = trainer.train(setting, [0, 1, 2], CFG64, "cpu", progress=False)
    for seed in (0, 2):
        alone, _ = trainer.train(setting, [seed], CFG64, "cpu", progress=False)
        assert batched[seed]["step"] == alone[seed]["step"]
        np.testing.assert_allclose(batched[seed]["value"], alone[seed]["value"], rtol=rtol, atol=0)


def test_training_learns_addition_with_nac():
    setting = Setting("operations", "nac_add", "add", 20, 2, 0.5, 0.25, (1.0, 2.0), (2.0, 6.0))
    cfg = trainer.TrainConfig(iterations=3000, eval_every=500, validation_size=500, test_size=500, **PAPER)
    curves, _ = trainer.train(setting, [0], cfg, "cpu", progress=False)
    test = _values(curves[0], "test", "mse")
    assert test[-1] < test[0] / 100  # extrapolation error falls by orders of magnitude


def test_same_seed_same_bytes_and_evaluation_schedule():
    a, _ = trainer.train(SETTING, [1], CFG, "cpu", progress=False)
    b, _ = trainer.train(SETTING, [1], CFG, "cpu", progress=False)
    assert a == b
    assert sorted(set(a[1]["step"])) == list(range(0, 301, 50))  # step 0 included, before each update
    assert set(zip(a[1]["split"], a[1]["metric"])) == {("valid", "mse"), ("test", "mse"), ("train", "loss"),
                                                        ("weights", "sparsity_error")}


def test_resume_from_checkpoint_equals_uninterrupted(tmp_path, monkeypatch):
    full, _ = trainer.train(SETTING, [0, 1], CFG, "cpu", progress=False)
    ckpt = tmp_path / "run.pt"
    # First attempt: checkpoint at every evaluation, killed after step 150.
    with killed_after_optimizer_steps(monkeypatch, 151):
        trainer.train(SETTING, [0, 1], CFG, "cpu", checkpoint=str(ckpt), checkpoint_every_s=0, progress=False)
    assert ckpt.exists()
    assert torch.load(ckpt, weights_only=True)["state"]["step"] == 151
    resumed, _ = trainer.train(SETTING, [0, 1], CFG, "cpu", checkpoint=str(ckpt), progress=False)
    assert resumed == full


def test_a_nan_seed_ends_and_the_others_continue(monkeypatch):
    clean, _ = trainer.train(SETTING, [0, 2], CFG64, "cpu", progress=False)
    original = trainer.BatchedNetwork.__init__

    def poisoned(self, *args, **kwargs):
        original(self, *args, **kwargs)
        with torch.no_grad():
            self.layer2.w_hat[1].fill_(float("nan"))  # seed 1 of [0, 1, 2]

    monkeypatch.setattr(trainer.BatchedNetwork, "__init__", poisoned)
    curves, state = trainer.train(SETTING, [0, 1, 2], CFG64, "cpu", progress=False)
    assert state.ended_at.tolist() == [-1, 50, -1]  # found at the first evaluation after the NaN step
    assert sorted(set(curves[1]["step"])) == [0]  # the crashed run keeps its partial curve
    for seed in (0, 2):
        np.testing.assert_allclose(curves[seed]["value"], clean[seed]["value"], rtol=1e-9, atol=0)


def test_resume_keeps_a_nan_seen_just_before_the_checkpoint(tmp_path, monkeypatch):
    """A NaN at step 100 (an evaluation step, so a checkpoint follows at once) ends that seed at step 150, also
    when the run is killed right after that checkpoint and resumed from it."""
    real_batch = trainer.SeedBatch.batch

    def transient_nan(self, step):
        x, t = real_batch(self, step)
        if step == 100:
            t = t.clone()
            t[1] = float("nan")
        return x, t

    monkeypatch.setattr(trainer.SeedBatch, "batch", transient_nan)
    full, state = trainer.train(SETTING, [0, 1], CFG64, "cpu", progress=False)
    assert state.ended_at.tolist() == [-1, 150]
    ckpt = tmp_path / "run.pt"
    with killed_after_optimizer_steps(monkeypatch, 101):
        trainer.train(SETTING, [0, 1], CFG64, "cpu", checkpoint=str(ckpt), checkpoint_every_s=0, progress=False)
    assert torch.load(ckpt, weights_only=False)["state"]["step"] == 101
    resumed, resumed_state = trainer.train(SETTING, [0, 1], CFG64, "cpu", checkpoint=str(ckpt), progress=False)
    assert resumed_state.ended_at.tolist() == [-1, 150]
    for seed in (0, 1):  # seed 1's train loss at step 100 is NaN, so compare as arrays (NaN equals NaN there)
        assert {k: v for k, v in resumed[seed].items() if k != "value"} == \
            {k: v for k, v in full[seed].items() if k != "value"}
        np.testing.assert_array_equal(resumed[seed]["value"], full[seed]["value"])


def test_a_training_process_killed_by_sigkill_resumes_to_the_same_curves(tmp_path):
    """The real thing: `reprobench arith train` killed with SIGKILL after a checkpoint (no handler runs), then run
    again, writes the curves an uninterrupted process writes."""
    import signal
    import subprocess
    import sys
    import time

    from reprobench.core.curves import read_curve

    pack = Pack(1500, (SETTING,), (2,))  # seeds 0 and 1; the curves go to the grid's paths

    def command(checkpoint):
        return [sys.executable, "-m", "reprobench", "arith", "train", "--pack", pack.to_json(), "--batch-size", "128",
                "--learning-rate", "0.001", "--eval-every", "100", "--validation-size", "500", "--test-size", "500",
                "--device", "cpu", "--threads", "1", "--scale", "small", "--checkpoint", str(checkpoint),
                "--checkpoint-minutes", "0.0001", "--cuda-step", "eager"]

    for folder in ("full", "killed"):
        (tmp_path / folder).mkdir()
    subprocess.run(command(tmp_path / "full.pt"), check=True, capture_output=True, cwd=tmp_path / "full")
    ckpt = tmp_path / "killed.pt"
    proc = subprocess.Popen(command(ckpt), stderr=subprocess.DEVNULL, cwd=tmp_path / "killed")
    deadline = time.monotonic() + 120
    while not ckpt.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, "the run ended before it was killed; give it more iterations"
    assert ckpt.exists() and not (tmp_path / "killed" / "results").exists()
    subprocess.run(command(ckpt), check=True, capture_output=True, cwd=tmp_path / "killed")
    for seed in (0, 1):
        full, _ = read_curve(tmp_path / "full" / SETTING.curve_path(seed))
        resumed, _ = read_curve(tmp_path / "killed" / SETTING.curve_path(seed))
        assert full.equals(resumed)
    assert not ckpt.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["full", "killed"]



@pytest.mark.parametrize("cuda_step", ["eager", "graph"])
def test_a_training_step_has_no_host_sync(cuda_step):
    """No training step makes the host wait for the device (counted on the CPU as the tensor calls that would sync
    on a GPU): the trainer syncs only at evaluations."""
    from reprobench.core.hostsync import HostSyncs

    run = trainer.Steps([SETTING, SETTING], [0, 1], CFG, "cpu", cuda_step=cuda_step)
    run.step(1)
    with HostSyncs() as syncs:
        for step in (2, 3, 4):
            run.step(step)
    assert syncs.count == 0, syncs.points


def test_the_graph_and_compiled_steps_train_as_the_eager_step():
    """The steps that CUDA captures once (their step number read from a tensor; the stream's torch ops, or its
    integer hash compiled by torch.compile with the exact subset sums as one product), run on the CPU, give the
    default trainer's curves bit for bit (the numba stream from FUSED_FROM steps on)."""
    cfg = trainer.TrainConfig(iterations=trainer.FUSED_FROM, eval_every=500, validation_size=200, test_size=200,
                              **PAPER)
    default, _ = trainer.train(SETTING, [0, 3], cfg, "cpu", progress=False)
    for cuda_step in ("graph", "compiled"):
        other, _ = trainer.train(SETTING, [0, 3], cfg, "cpu", progress=False, cuda_step=cuda_step)
        assert other == default, cuda_step
