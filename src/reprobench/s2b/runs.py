"""The S2B jobs that need no agent, each writing a curve file: the posdis speaker's metrics per episode, and the
disentanglement of SCS stimuli per (O, sampling protocol). The computations are in reprobench.s2b.probes."""

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
