"""The S2B jobs, each writing a curve file: the posdis speaker's metrics per episode and the disentanglement of SCS
stimuli per (O, sampling protocol) (reprobench.s2b.probes); and one R2D2 training run of Table 2 (reprobench.s2b.train)
with an evaluation record per eval_every observations."""

from __future__ import annotations

from reprobench.core import curves
from reprobench.core.progress import Progress
from reprobench.core.provenance import Timer
from reprobench.s2b import PAPER, probes

SPEAKER_SETTING = {"n_dims": 3, "v_min": 2, "v_max": 5, "n_oc": 4, "max_len": 4, "n_points": 256, "batch_size": 32}


def speaker_run(seed: int, episodes: int, out: str, scale: str, v_min: int = 2, v_max: int = 5) -> None:
    import numpy as np

    setting = {**SPEAKER_SETTING, "v_min": v_min, "v_max": v_max}
    rng = np.random.default_rng(seed)  # as probes.speaker_metrics: the same numbers
    progress = Progress(episodes, f"s2b speaker seed {seed}")
    rows = []
    with Timer() as timer:
        for _ in range(episodes):
            rows.append(probes.speaker_episode(rng, **setting))
            progress.update(1)
    progress.close()
    values = {k: [r[k] for r in rows] for k in probes.SPEAKER_METRICS}
    record = curves.provenance(paper=PAPER.id, experiment="speaker", model="posdis_speaker", seed=seed, scale=scale,
                               variant="faithful", setting=setting, config={"episodes": episodes}, device="cpu",
                               **timer.fields())
    curves.write_curve(curves.series_rows(seed, [("episode", k, v) for k, v in values.items()]), out, record)


def disentanglement_run(seed: int, n_oc: list[int], out: str, scale: str) -> None:
    series = []
    progress = Progress(len(n_oc) * len(probes.PROTOCOLS), f"s2b disentanglement seed {seed}")
    with Timer() as timer:
        for o in n_oc:
            for protocol in probes.PROTOCOLS:
                scores = probes.disentanglement(seed, o, protocol)
                series += [(f"O={o}/{protocol}", k, [v]) for k, v in scores.items()]
                progress.update(1)
    progress.close()
    record = curves.provenance(paper=PAPER.id, experiment="disentanglement", model="scs_stimuli", seed=seed,
                               scale=scale, variant="faithful", setting={"n_values": [5, 5, 5], "n_oc": list(n_oc)},
                               config={"protocols": list(probes.PROTOCOLS)}, device="cpu", **timer.fields())
    curves.write_curve(curves.series_rows(seed, series), out, record)


def zsct_config(n_oc: int, shots: int, variant: str, seed: int, preset: str, budget: int, eval_every: int):
    """Table 2's run: the posdis speaker, descriptive K = 0, feedback, component-focused S-shot sampling, O
    object-centric samples; `preset` 'tiny' (test-sized networks and replay) or 'table2' (the reference's)."""
    import dataclasses

    from reprobench.s2b import train

    shot = f"component-focused-{shots}shot{'s' if shots > 1 else ''}"
    env = {"nbr_object_centric_samples": n_oc, "sampling_strategy": shot}
    if preset == "tiny":
        config = train.TrainConfig(env={**train.TABLE2_ENV, **env})
    else:
        config = train.preset(preset, **env)
    config = dataclasses.replace(config, seed=seed, budget=budget, eval_every=min(eval_every, budget))
    return train.corrected(config) if variant == "corrected" else config


def zsct_run(n_oc: int, shots: int, variant: str, seed: int, preset: str, budget: int, eval_every: int, out: str,
             scale: str, device: str, checkpoint: str | None = None) -> None:
    import dataclasses

    from reprobench.core import checkpoint as checkpoints
    from reprobench.s2b import train

    config = zsct_config(n_oc, shots, variant, seed, preset, budget, eval_every)
    with Timer() as timer:
        records = train.run(config, checkpoint=checkpoint, device=device, progress=True)
    keys = sorted({k for r in records for k, v in r.items() if isinstance(v, int | float)})
    series = [("eval", k, [float(r.get(k, float("nan"))) for r in records]) for k in keys]
    setting = {"n_oc": n_oc, "shots": shots, "env": dict(config.env)}
    record = curves.provenance(paper=PAPER.id, experiment="zsct", model=f"r2d2_{config.net.core}", seed=seed,
                               scale=scale, variant=variant, setting=setting,
                               config={"preset": preset, **{k: v for k, v in dataclasses.asdict(config).items()
                                                            if k != "env"}},
                               device=device, **timer.fields())
    curves.write_curve(curves.series_rows(seed, series), out, record)
    checkpoints.remove(checkpoint)
