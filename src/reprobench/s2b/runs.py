"""The S2B jobs, each writing a curve file: the posdis speaker's metrics per episode and the disentanglement of SCS
stimuli per (O, sampling protocol) (reprobench.s2b.probes); and one R2D2 training run (reprobench.s2b.train) of
Table 2, Table 4 or Figure 6 with an evaluation record per eval_every observations."""

from __future__ import annotations

from reprobench.core import curves
from reprobench.core.plugins import USER_CLASS, load_class, run_id
from reprobench.core.progress import Progress
from reprobench.core.provenance import Timer
from reprobench.s2b import PAPER
from reprobench.s2b.grid import EXPERIMENTS, SIZES

SPEAKER_SETTING = {"n_dims": 3, "v_min": 2, "v_max": 5, "n_oc": 4, "max_len": 4, "n_points": 256, "batch_size": 32}


def speaker_run(seed: int, episodes: int, out: str, scale: str, v_min: int = 2, v_max: int = 5, eoa_episodes: int = 0,
                eoa_epochs: int = 512, variant: str = "faithful") -> None:
    """The posdis speaker's metrics on `episodes` episodes, and its ease of acquisition (reprobench.s2b.eoa:
    `eoa_epochs` epochs on each episode's support combinations, scored on its query ones) on `eoa_episodes` more,
    drawn from a generator of their own ([seed, 1]), episode k's trials seeded 1000 seed + k. `variant` is the EoA
    listener's (DEVIATIONS S28; the speaker's metrics have none): 'faithful', one listener (initialised from 1000 seed)
    through the episodes in turn, as run_EoA_PS.sh's; 'corrected', a fresh listener per episode, seeded 1000 seed + k,
    all trained together."""
    import numpy as np

    from reprobench.s2b import probes  # imported here: scipy and sklearn, 1.4 s that a training job does not need

    if variant not in ("faithful", "corrected"):
        raise ValueError(f"variant must be 'faithful' or 'corrected', got {variant!r}")
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
        if eoa_episodes:
            values.update(_posdis_eoa(seed, eoa_episodes, eoa_epochs, v_min, v_max, variant))
    record = curves.provenance(paper=PAPER.id, experiment="speaker", model="posdis_speaker", seed=seed, scale=scale,
                               variant=variant, setting=setting,
                               config={"episodes": episodes, "eoa_episodes": eoa_episodes, "eoa_epochs": eoa_epochs},
                               device="cpu", **timer.fields())
    curves.write_curve(curves.series_rows(seed, [("episode", k, v) for k, v in values.items()]), out, record)


def _posdis_eoa(seed: int, episodes: int, epochs: int, v_min: int, v_max: int, variant: str
                ) -> dict[str, list[float]]:
    import numpy as np
    import torch

    from reprobench.s2b import eoa, stimuli

    s = SPEAKER_SETTING
    rng = np.random.default_rng([seed, 1])
    spaces = [stimuli.sample_space(rng, n_dims=s["n_dims"], v_min=v_min, v_max=v_max, n_oc=s["n_oc"])
              for _ in range(episodes)]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # these layers are tiny: one thread is faster (eoa's docstring)
    try:
        results = eoa.ease_of_acquisition_sequence(spaces, eoa.posdis_speaker(s["max_len"]),
                                                   eoa.EoAConfig(epochs=epochs),
                                                   seeds=[1000 * seed + k for k in range(episodes)],
                                                   listener=eoa.LISTENER_OF_VARIANT[variant])
    finally:
        torch.set_num_threads(threads)
    return {"eoa_accuracy": [r["accuracy"] for r in results],
            "eoa_train_accuracy": [r["train_accuracy"] for r in results]}


def disentanglement_run(seed: int, n_oc: list[int], out: str, scale: str) -> None:
    from reprobench.s2b import probes

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


def zsct_config(n_oc: int, shots: int, variant: str, seed: int, sizes: str, budget: int, eval_every: int):
    """Table 2's run: the posdis speaker, descriptive K = 0, feedback, component-focused S-shot sampling, O
    object-centric samples."""
    from reprobench.s2b import train

    shot = f"component-focused-{shots}shot{'s' if shots > 1 else ''}"
    config = train.preset("table2", nbr_object_centric_samples=n_oc, sampling_strategy=shot)
    return _sized(config, variant, seed, sizes, budget, eval_every)


def experiment_config(experiment: str, model: str, variant: str, seed: int, sizes: str, budget: int,
                        eval_every: int):
    """A Table 1 (multi-agent), Table 4 or Figure 5/6 run: grid.EXPERIMENTS[experiment][model] names the preset and
    whether the auxiliary reconstruction is on; a user's 'package.module:Class' (Table 4 only) is its core in the
    Archi LSTM's preset (reprobench.s2b.user_core)."""
    import dataclasses

    from reprobench.s2b import train, user_core
    from reprobench.s2b.cores import USER

    if USER_CLASS.match(model):  # a user's core, in Table 4's preset around it (reprobench.s2b.user_core)
        (name, recon), net = user_core.PRESET, {"core": USER, "user_core": model}
    else:
        (name, recon), net = EXPERIMENTS[experiment][model], {}
    config = train.preset(name)
    if net:
        config = dataclasses.replace(config, net=dataclasses.replace(config.net, **net))
    if not recon:
        config = dataclasses.replace(config, recon=dataclasses.replace(config.recon, enabled=False))
    return _sized(config, variant, seed, sizes, budget, eval_every)


def _sized(config, variant: str, seed: int, sizes: str, budget: int, eval_every: int):
    """`sizes` 'tiny' (train.small: test-sized networks and replay, 4 actors) or 'reference' (the preset's)."""
    import dataclasses

    from reprobench.s2b import train

    if sizes not in SIZES:
        raise ValueError(f"sizes must be one of {SIZES}, got {sizes!r}")
    if sizes == "tiny":
        config = train.small(config)
    config = dataclasses.replace(config, seed=seed, budget=budget, eval_every=min(eval_every, budget))
    return train.corrected(config) if variant == "corrected" else config


def train_run(config, experiment: str, model: str, setting: dict, variant: str, sizes: str, out: str, scale: str,
              device: str, checkpoint: str | None = None, checkpoint_minutes: float = 10.0) -> None:
    """Train `config` to its budget and write its evaluations as one curve file: R2D2 (resuming from `checkpoint`,
    saved at every evaluation and every `checkpoint_minutes` between them: train.run), or, for Table 2's model
    'package.module:Class', a user's agent (reprobench.s2b.agents, no checkpoint). A user's Table 4 core trains as
    R2D2 does; both are recorded under their run id, with the class in the setting's user_class."""
    import dataclasses

    from reprobench.core import checkpoint as checkpoints
    from reprobench.s2b import agents, train

    user = bool(USER_CLASS.match(model))  # a user's agent (Table 2) or core (Table 4)
    agent = user and experiment == "zsct"
    marl = None
    with Timer() as timer:
        if agent:
            records = agents.run_agent(load_class(model, "s2b.zsct.models"), config, device, progress=True)
        else:
            if config.task == "marl":  # Table 1: the probe's size follows the run's (MARLConfig)
                from reprobench.s2b.marl import MARLConfig

                marl = MARLConfig.small() if sizes == "tiny" else MARLConfig()
            records = train.run(config, checkpoint=checkpoint, device=device, progress=True, marl=marl,
                                checkpoint_every_s=60 * checkpoint_minutes)
    keys = sorted({k for r in records for k, v in r.items() if isinstance(v, int | float)})
    series = [("eval", k, [float(r.get(k, float("nan"))) for r in records]) for k in keys]
    if user:
        setting = {**setting, "user_class": model}
        model = run_id(model)
    record = curves.provenance(paper=PAPER.id, experiment=experiment, model=model, seed=config.seed, scale=scale,
                               variant=variant, setting={**setting, "core": None if agent else config.net.core,
                                                                "env": dict(config.env)},
                               config={"sizes": sizes, **{k: v for k, v in dataclasses.asdict(config).items()
                                                          if k != "env"},
                                       **({"marl": dataclasses.asdict(marl)} if marl is not None else {})},
                               device=device, **timer.fields())
    curves.write_curve(curves.series_rows(config.seed, series), out, record)
    checkpoints.remove(checkpoint)
