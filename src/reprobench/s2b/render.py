"""The paper's outputs: Table 1 (the learned speaker and listener, and the Posdis-Speaker column), Table 2 (ZSCT of
the R2D2 listener), Table 3 (the speaker's
utterances), Appendix D.2's disentanglement table, Figures 3 and 4, and the published-vs-reproduced comparison."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from reprobench.core import compare, curves, plotting, tables, yours
from reprobench.core.compare import Interval
from reprobench.core.plugins import display_name, spec_of
from reprobench.s2b import PAPER, probes, published
from reprobench.s2b.grid import R2D2
from reprobench.s2b.speaker import posdis_message

SPEAKER_ROWS = {  # our metric -> (label, published metric or None)
    "topsim": ("topsim (EGG: Hamming meanings, normalised edit distance)", "topsim"),
    "posdis": ("posdis", "posdis"),
    "bosdis": ("bosdis (ReferentialGym's speaker-centred, EoS counted)", "bosdis"),
    "bosdis_listener": ("bosdis (EGG's listener-centred)", None),
    "topsim_referentialgym": ("topsim (ReferentialGym: cosine of class indices)", None),
    "eoa_accuracy": ("Acc_EoA (a listener trained on the support, scored on the query)", "acc_eoa"),
}
D2_METRICS = {"factorvae_score": "FactorVAE", "mig": "MIG", "modularity": "Modularity"}
# Appendix D.2's sampling protocols as variants: ReferentialGym's metric modules ran in the reference code
VARIANT_OF = {"referentialgym": "faithful", "disentanglement_lib": "corrected"}
TABLE3_LATENTS = [[0, 1, 2], [1, 3, 4], [2, 5, 0], [3, 1, 2], [4, 3, 4]]  # the paper's Table 3
TABLE3_TOKENS = ["1, 2, 3, 0", "2, 4, 5, 0", "3, 6, 1, 0", "4, 2, 3, 0", "5, 4, 5, 0"]


def _fmt(mean: float, std: float) -> str:
    return "—" if np.isnan(mean) else f"{mean:.2f} ± {std:.2f}"


def _stats(probes_frame: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """mean and std (ddof 1) over seeds, in percent, per (setting, metric)."""
    part = probes_frame[probes_frame["experiment"] == experiment]
    g = part.groupby(["setting", "metric"])["value"]
    return pd.DataFrame({"mean": 100 * g.mean(), "std": 100 * g.std(ddof=1), "n_seeds": g.size()}).reset_index()


def _paper(table: str, metric: str, setting: str) -> float:
    pub = published.tables()
    row = pub[(pub["table"] == table) & (pub["metric"] == metric) & (pub["setting"] == setting)]
    return float(row["mean"].iloc[0]) if len(row) else np.nan


# Table 1's learned columns: (our metric in zsct.parquet, the published metric), in the paper's row order
TABLE1_MEASURES = {"zsct_accuracy": "acc_zsct", "eoa_accuracy": "acc_eoa", "topsim": "topsim", "posdis": "posdis",
                   "bosdis": "bosdis"}
TABLE1_LABELS = {"zsct_accuracy": "Acc_ZSCT (greedy query-phase accuracy)",
                 **{k: v[0] for k, v in SPEAKER_ROWS.items()}}
TABLE1_SHOTS = {"s1": 1, "s2": 2}  # grid.EXPERIMENTS["table1"] models -> S


def _table1_stats(zsct: pd.DataFrame | None) -> pd.DataFrame:
    """Per (variant, S, measure): mean and std (ddof 1) over seeds of the learned runs' last evaluation, in percent."""
    rows = []
    runs = zsct[zsct["experiment"] == "table1"] if zsct is not None else pd.DataFrame(columns=["variant", "model"])
    for (variant, model), g in runs.groupby(["variant", "model"], sort=True):
        for metric in TABLE1_MEASURES:
            v = 100 * g[metric].astype(float)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # every seed NaN: an undefined measure
                rows.append({"variant": variant, "S": TABLE1_SHOTS.get(model, model), "metric": metric,
                             "mean": float(v.mean()), "std": float(v.std(ddof=1)), "n_seeds": int(v.notna().sum())})
    return pd.DataFrame(rows, columns=["variant", "S", "metric", "mean", "std", "n_seeds"])


def table1(probes_frame: pd.DataFrame, stem: str, zsct: pd.DataFrame | None = None) -> list[str]:
    """Rows: the paper's measures (then the PS-only extra ones); columns: S = 1 and S = 2 of the learned speaker and
    listener (paper, ours per variant), then the Posdis-Speaker's (paper, ours)."""
    stats = _stats(probes_frame, "speaker")
    learned = _table1_stats(zsct)
    cells = sorted({(int(r.S), r.variant) for r in learned.itertuples()}, key=lambda c: (c[0], c[1] != "faithful"))
    shots = sorted({s for s, _ in cells} | {1, 2})
    header = ["Measure"]
    for s in shots:
        header += [f"S={s} (paper)", *(f"S={s} (ours{'' if v == 'faithful' else f', {v}'})" for t, v in cells
                                       if t == s)]
    header += ["PS (paper)", "PS (ours)"]
    rows, data = [], []
    for metric in [*TABLE1_MEASURES, *(m for m in SPEAKER_ROWS if m not in TABLE1_MEASURES)]:
        pub_metric = TABLE1_MEASURES.get(metric, SPEAKER_ROWS.get(metric, (None, None))[1])
        row = [TABLE1_LABELS[metric]]
        for s in shots:
            paper = _paper_cell_metric("table1", pub_metric, f"S={s}") if metric in TABLE1_MEASURES else "—"
            row.append(paper)
            for t, variant in cells:
                if t != s:
                    continue
                g = learned[(learned["S"] == s) & (learned["variant"] == variant) & (learned["metric"] == metric)]
                mean, std = (float(g["mean"].iloc[0]), float(g["std"].iloc[0])) if len(g) else (np.nan, np.nan)
                defined = int(g["n_seeds"].iloc[0]) if len(g) else 0  # seeds where the measure is defined
                row.append("—" if metric not in TABLE1_MEASURES else f"{mean:.2f} (1 seed)" if defined == 1
                           else _fmt(mean, std))
                if len(g):
                    data.append({"column": f"S={s}", "variant": variant, "metric": metric, "mean": mean, "std": std,
                                 "n_seeds": int(g["n_seeds"].iloc[0]),
                                 "published": _paper("table1", pub_metric, f"S={s}")})
        ps = stats[stats["metric"] == metric]
        mean, std = (float(ps["mean"].iloc[0]), float(ps["std"].iloc[0])) if len(ps) else (np.nan, np.nan)
        paper = _paper("table1", pub_metric, "PS") if pub_metric and metric != "eoa_accuracy" else np.nan
        row += ["—" if np.isnan(paper) else f"{paper:.2f}", _fmt(mean, std)]
        if metric in SPEAKER_ROWS:
            data.append({"column": "PS", "variant": "faithful", "metric": metric, "mean": mean, "std": std,
                         "n_seeds": int(ps["n_seeds"].iloc[0]) if len(ps) else 0, "published": paper})
        rows.append(row)
    n = probes_frame[probes_frame["experiment"] == "speaker"]
    runs = zsct[zsct["experiment"] == "table1"] if zsct is not None else pd.DataFrame()
    budget = int(runs["observations"].max()) if len(runs) else 0
    note = (f"Learned columns: scale {curves.scale_label(runs) if len(runs) else '—'}; {budget:,} observations per "
            "run (paper: 500k); one network plays both roles, R2D2 + VDN + SAD with Table 4's Archi LSTM settings "
            "(DEVIATIONS S16); the last greedy evaluation: ZSCT accuracy, and the speaker frozen at the end of "
            "evaluation episodes and asked about every combination of the episode, its messages scored as the PS's "
            "and by the EoA listener (faithful: one listener through the probed episodes, corrected: a fresh one "
            "each; DEVIATIONS S28; reprobench.s2b.marl); a speaker that says one message for everything scores 0 "
            "on topsim, posdis and bosdis, as ReferentialGym logs it (S22); — where a measure is undefined. "
            f"PS: scale {curves.scale_label(n) if len(n) else '—'}; "
            f"the mean over each seed's episodes ({int(n['n'].max()) if len(n) else 0} per seed) of the metrics on 256 "
            "points of the episode's support split drawn in factor-fixed batches of 32 (ReferentialGym's protocol; "
            "d(j) ~ U{2..5}, O = 4, L = 4), then mean ± std over seeds; the paper's PS row is one unrecorded draw of "
            "that protocol (DEVIATIONS S1). Acc_EoA (the paper: N/A for PS): one listener "
            "carried through further episodes of each seed, as run_EoA_PS.sh's (DEVIATIONS S28; reprobench.s2b.eoa), "
            "chance 50%.")
    return tables.write_all(stem, header, rows, rows, pd.DataFrame(data), note=note)


def _paper_cell_metric(table: str, metric: str, setting: str) -> str:
    pub = published.tables()
    row = pub[(pub["table"] == table) & (pub["metric"] == metric) & (pub["setting"] == setting)]
    return f"{row['mean'].iloc[0]:.2f} ± {row['std'].iloc[0]:.2f}" if len(row) else "—"


def _zsct_stats(zsct: pd.DataFrame, experiment: str = "zsct", by=("model", "variant", "n_oc", "shots")) -> pd.DataFrame:
    g = zsct[zsct["experiment"] == experiment].groupby(list(by))["zsct_accuracy"]
    return pd.DataFrame({"mean": 100 * g.mean(), "std": 100 * g.std(ddof=1), "n_seeds": g.size()}).reset_index()


def _model_label(model: str) -> str:
    """R2D2, or a user's agent as 'Class (yours)'."""
    return display_name(model, {R2D2: "R2D2"})


def table2(zsct: pd.DataFrame, stem: str) -> list[str]:
    """Rows (model, variant, O), columns S, as the paper: ours mean ± std over seeds, the paper's next to it."""
    stats = _zsct_stats(zsct)
    stats = stats.sort_values(["model", "variant", "n_oc", "shots"], key=lambda c: c != R2D2 if c.name == "model"
                              else c, kind="stable")  # R2D2 first, then the user's agents
    shots = sorted(stats["shots"].unique())
    header = ["Model", "Variant", "O", *[f"S={s} (ours)" for s in shots], *[f"S={s} (paper)" for s in shots]]
    rows, data = [], []
    for (model, variant, o), g in stats.groupby(["model", "variant", "n_oc"], sort=False):
        ours = {int(r.shots): _fmt(r.mean, r.std) for r in g.itertuples()}
        paper = {s: _paper_cell("table2", f"O={o} S={s}") for s in shots}
        rows.append([_model_label(model), variant, str(o), *(ours.get(s, "—") for s in shots),
                     *(paper[s] for s in shots)])
        data += [{"model": model, "variant": variant, "O": int(o), "S": int(r.shots), "mean": r.mean, "std": r.std,
                  "n_seeds": int(r.n_seeds)} for r in g.itertuples()]
    zsct = zsct[zsct["experiment"] == "zsct"]
    budget = int(zsct["observations"].max()) if len(zsct) else 0
    note = (f"Scale: {curves.scale_label(zsct) if len(zsct) else '—'}; {budget:,} observations per run (paper: 5M, "
            "32 actors); the last greedy evaluation's query-phase accuracy (chance 50%). "
            "R2D2 is the reproduced listener (reprobench.s2b.train) with the posdis speaker; other rows are user "
            "agents (reprobench.s2b.agents) trained and evaluated the same way; the paper's columns are R2D2's.")
    return tables.write_all(stem, header, rows, rows, pd.DataFrame(data), note=note)


TABLE4_MODELS = {"lstm": "LSTM", "esbn": "ESBN", "dcem": "DCEM"}  # ours -> the paper's row


def table4(zsct: pd.DataFrame, stem: str) -> list[str]:
    """One row per (variant, core): ours mean ± std over seeds, the paper's next to it."""
    stats = _zsct_stats(zsct, "table4", ("variant", "model"))
    order = {m: i for i, m in enumerate(TABLE4_MODELS)}  # the paper's column order, then any other model
    stats = stats.sort_values(["variant", "model"], key=lambda c: c.map(order).fillna(len(order)) if c.name == "model"
                              else c, kind="stable")
    header = ["Variant", "Core", "ZSCT (ours)", "ZSCT (paper)", "Seeds"]
    rows, data = [], []
    for r in stats.itertuples():
        paper = display_name(r.model, TABLE4_MODELS)  # a user's core: 'Class (yours)', no paper cell
        rows.append([r.variant, paper, _fmt(r.mean, r.std), _paper_cell("table4", paper), str(r.n_seeds)])
        data.append({"variant": r.variant, "model": r.model, "mean": r.mean, "std": r.std,
                     "n_seeds": int(r.n_seeds), "published": _paper("table4", "acc_zsct", paper)})
    runs = zsct[zsct["experiment"] == "table4"]
    budget = int(runs["observations"].max()) if len(runs) else 0
    note = (f"Scale: {curves.scale_label(runs) if len(runs) else '—'}; {budget:,} observations per run (paper: 10M, "
            "32 actors); the last greedy evaluation's query-phase accuracy (chance 50%). The Archi cores as run "
            "(specs/s2b.md 4.3 B-D), N_dim = 3, V in [2, 3] (V = 4, A = 171), the reconstruction loss on "
            "(adaptive period), Table 4's training cadence (reprobench.s2b.train)." +
            (" A core marked (yours) is a user's (reprobench.s2b.user_core) in the Archi LSTM's place: the same "
             "encoder, head, learner and reconstruction." if any(map(spec_of, stats["model"])) else ""))
    return tables.write_all(stem, header, rows, rows, pd.DataFrame(data), note=note)


def _curves_by_model(paths: list[str], experiment: str, present=(), finite=()
                     ) -> dict[tuple[str, str], list[pd.DataFrame]]:
    """{(model, variant): one wide frame per seed} of one experiment's training curve files, each with the metrics
    `present`, `finite` (not all NaN: a training accuracy may be, before any episode ends) and its observation
    counts."""
    runs: dict[tuple[str, str], list[pd.DataFrame]] = {}
    for path, frame, record in curves.read_curves(paths, expect={"paper": PAPER.id,
                                                                 "experiment": experiment}):
        curves.require_metrics(path, frame, record, present=present, finite=finite, labels=("observations",))
        runs.setdefault((record["model"], record["variant"]), []).append(curves.wide(frame))
    return runs


def figure5(paths: list[str], stem: str) -> list[str]:
    """The second shot's accuracy over observations per representation: the training episodes' (epsilon-greedy, the
    reference's logged S2B/Accuracy/Mean/train1) solid, the greedy evaluations' dashed; mean and min-max band."""
    import matplotlib.pyplot as plt

    runs = _curves_by_model(paths, "fig5", present=("train_accuracy/train1",), finite=("accuracy/train1",))
    colors = {"ohe": plotting.COLORS[0], "scs": plotting.COLORS[3]}  # the paper's: OHE blue, SCS orange
    with plotting.style(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a record with no finished episode holds NaN: a gap
        fig, ax = plt.subplots(figsize=(6, 3.8))
        for (model, variant), frames in sorted(runs.items()):
            label = model.upper() + ("" if variant == "faithful" else f" ({variant})")
            color = colors.get(model, plotting.COLORS[2])
            for key, style, kind in (("train_accuracy/train1", "-", "training"), ("accuracy/train1", "--", "greedy")):
                n = min(len(f) for f in frames)
                x = frames[0]["observations"].to_numpy()[:n]
                y = 100 * np.stack([f[key].to_numpy()[:n] for f in frames])
                ax.plot(x, np.nanmean(y, axis=0), style, color=color, label=f"{label}, {kind} (n = {len(frames)})")
                ax.fill_between(x, np.nanmin(y, axis=0), np.nanmax(y, axis=0), color=color, alpha=0.15)
        ax.set(title="Recall task, second shot", xlabel="observations", ylabel="accuracy (%)")
        ax.legend(fontsize=7)
        return plotting.save(fig, stem)


FIG6_MODELS = {"lstm": "LSTM", "dnc": "DNC", "lstm_rec": "LSTM+Rec", "dnc_rec": "DNC+Rec"}


def figure6(paths: list[str], stem: str) -> list[str]:
    """(a) ZSCT accuracy and (b) stimulus reconstruction accuracy over observations, per model: the mean over seeds
    and the min-max band, one line per (model, variant)."""
    import matplotlib.pyplot as plt

    runs = _curves_by_model(paths, "fig6", finite=("zsct_accuracy",))
    with plotting.style():
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for k, ((model, variant), frames) in enumerate(sorted(runs.items())):
            label = FIG6_MODELS.get(model, model) + ("" if variant == "faithful" else f" ({variant})")
            color = plotting.COLORS[k % len(plotting.COLORS)]
            for ax, key in zip(axes, ("zsct_accuracy", "rec_stimulus_accuracy")):
                if not all(key in f for f in frames):
                    continue
                x = frames[0]["observations"].to_numpy()
                n = min(len(f) for f in frames)
                y = 100 * np.stack([f[key].to_numpy()[:n] for f in frames])
                ax.plot(x[:n], np.nanmean(y, axis=0), color=color, label=f"{label} (n = {len(frames)})")
                ax.fill_between(x[:n], np.nanmin(y, axis=0), np.nanmax(y, axis=0), color=color, alpha=0.2)
        axes[0].axhline(25, color="grey", lw=0.8, ls=":", label="chance (4-way)")
        axes[0].set(title="(a) ZSCT accuracy", xlabel="observations", ylabel="accuracy (%)")
        axes[1].set(title="(b) stimulus reconstruction accuracy", xlabel="observations", ylabel="accuracy (%)")
        for ax in axes:
            ax.legend(fontsize=7)
        return plotting.save(fig, stem)


def _paper_cell(table: str, setting: str) -> str:
    pub = published.tables()
    row = pub[(pub["table"] == table) & (pub["setting"] == setting)]
    return f"{row['mean'].iloc[0]:.2f} ± {row['std'].iloc[0]:.2f}" if len(row) else "—"


def table3(stem: str) -> list[str]:
    messages = posdis_message(np.array(TABLE3_LATENTS), max_len=4)
    header = ["#1", "#2", "#3", "Tokens (ours)", "Tokens (paper)"]
    rows = [[*map(str, lat), ", ".join(map(str, m)), pub] for lat, m, pub in zip(TABLE3_LATENTS, messages,
                                                                                TABLE3_TOKENS)]
    data = pd.DataFrame([{"latents": " ".join(map(str, lat)), "tokens": r[3], "published": r[4],
                          "equal": r[3] == r[4]} for lat, r in zip(TABLE3_LATENTS, rows)])
    return tables.write_all(stem, header, rows, rows, data,
                            note="The posdis speaker (reprobench.s2b.speaker): token i = latent class i + 1, then "
                                 "EoS (0) up to L = 4.")


def _d2_rows(probes_frame: pd.DataFrame) -> list[dict]:
    stats = _stats(probes_frame, "disentanglement")
    out = []
    for setting in sorted(stats["setting"].unique(), key=lambda s: (int(s.split("/")[0][2:]), s)):
        o, protocol = setting.split("/")
        for metric in D2_METRICS:
            s = stats[(stats["setting"] == setting) & (stats["metric"] == metric)]
            if not len(s):
                continue
            out.append({"O": int(o[2:]), "protocol": protocol, "metric": metric, "mean": float(s["mean"].iloc[0]),
                        "std": float(s["std"].iloc[0]), "n_seeds": int(s["n_seeds"].iloc[0])})
    return out


def tableD2(probes_frame: pd.DataFrame, stem: str) -> list[str]:
    data = pd.DataFrame(_d2_rows(probes_frame))
    header = ["O", "Sampling", *D2_METRICS.values()]
    rows = []
    for (o, protocol), g in data.groupby(["O", "protocol"], sort=True):
        cells = {r.metric: _fmt(r.mean, r.std) for r in g.itertuples()}
        rows.append([str(o), protocol, *(cells.get(m, "—") for m in D2_METRICS)])
    rows.append(["paper (O not stated)", "—", *(f"{_paper('d2', m, 'd=5'):g}" for m in D2_METRICS)])
    rows.append(["paper, O = 1", "—", "—", *(f"{_paper('d2', m, 'O=1'):g}" for m in ("mig", "modularity"))])
    note = ("N_dim = 3, d(j) = 5. disentanglement_lib: 10,000 i.i.d. points (FactorVAE: batch 64, 10,000 / 5,000 "
            "votes); referentialgym: ReferentialGym's metric modules' sampling, 256 points in factor-fixed batches of "
            "32 (FactorVAE: 256 / 128 votes, each a factor-fixed batch of 32; S23). Mean ± std over seeds (one sampled "
            "space each). Neither protocol gives the paper's MIG and Modularity together, nor their drop at O = 1 "
            "(DEVIATIONS S2).")
    return tables.write_all(stem, header, rows, rows, data, note=note)


# --- figures ----------------------------------------------------------------------------------------------------


def figure3(stem: str, seed: int = 0) -> list[str]:
    import matplotlib.pyplot as plt

    ep = probes.figure_episode(seed)
    space, coords, scs, query = ep["space"], ep["coords"], ep["scs"], ep["query"]
    x = np.arange(len(coords))
    with plotting.style():
        fig, axes = plt.subplots(space.n_dims, 2, figsize=(10, 2.4 * space.n_dims), sharey="row",
                                 gridspec_kw={"width_ratios": [4, 1]}, squeeze=False)
        grid = np.linspace(-1, 1, 400)
        for i in range(space.n_dims):
            ax, kde = axes[i]
            for v in range(int(space.n_values[i])):
                color = plotting.COLORS[v % len(plotting.COLORS)]
                sel = coords[:, i] == v
                ax.scatter(x[sel], scs[sel, i], s=12, color=color, label=f"value {v}")
                mu, sd = space.means[i, v], space.sigmas[i, v]
                kde.plot(np.exp(-0.5 * ((grid - mu) / sd) ** 2) / (sd * np.sqrt(2 * np.pi)), grid, color=color)
            ax.axvline(query.argmax() - 0.5, color="grey", linestyle="--", linewidth=1)
            ax.set_ylabel(f"dimension {i} (d = {int(space.n_values[i])})")
            kde.set_xticks([])
        axes[0][0].set_title("support phase | query phase (RG index)")
        axes[-1][0].set_xlabel("RG of the meta-RG")
        axes[0][1].set_title("value kernels N(mu, sigma)")
        return plotting.save(fig, stem)


def figure4(stem: str, seed: int = 0) -> list[str]:
    import matplotlib.pyplot as plt

    ep = probes.figure_episode(seed)
    messages = ep["messages"]
    examples = {"d = (4, 2, 3)": [4, 2, 3], "d = (3, 3, 3)": [3, 3, 3]}
    with plotting.style():
        fig = plt.figure(figsize=(10, 6))
        top = fig.add_subplot(2, 1, 1)
        top.imshow(messages.T, aspect="auto", cmap="viridis", interpolation="nearest")
        for (r, c), token in np.ndenumerate(messages.T):
            top.text(c, r, str(token), ha="center", va="center", fontsize=6, color="white")
        top.set_yticks(range(messages.shape[1]), [f"token {k}" for k in range(messages.shape[1])])
        top.set_xlabel("RG of the meta-RG of Figure 3")
        top.set_title("posdis speaker's messages")
        rng = np.random.default_rng(seed)
        for k, (name, d) in enumerate(examples.items()):
            from reprobench.s2b import stimuli

            space = stimuli.sample_space(rng, n_values=d, n_oc=1)
            coords = stimuli.combinations(d)[:: max(1, int(np.prod(d)) // 4)][:4]
            ohe = stimuli.one_hot(coords, d)
            scs = stimuli.observe(space, coords, 0)
            ax = fig.add_subplot(2, 4, 5 + 2 * k)
            ax.imshow(ohe, cmap="Greys", aspect="auto", vmin=0, vmax=1)
            ax.set_title(f"OHE/MHE, {name}", fontsize=8)
            ax.set_yticks(range(len(coords)), [str(tuple(c)) for c in coords], fontsize=6)
            ax = fig.add_subplot(2, 4, 6 + 2 * k)
            ax.imshow(scs, cmap="coolwarm", aspect="auto", vmin=-1, vmax=1)
            ax.set_title(f"SCS, {name}", fontsize=8)
            ax.set_yticks([])
        return plotting.save(fig, stem)


# --- comparison -------------------------------------------------------------------------------------------------


def _zsct_rows(zsct: pd.DataFrame):
    """Tables 2 and 4, one per stats row: (result, experiment, stats row, the comparison's row label, the model's
    name in the tables, the paper's setting, None for a model the paper has no number of: a user's)."""
    for r in _zsct_stats(zsct, "zsct", ("model", "variant", "n_oc", "shots")).itertuples():
        setting = f"O={r.n_oc} S={r.shots}"
        yield "table2", "zsct", r, setting, _model_label(r.model), setting if r.model == R2D2 else None
    for r in _zsct_stats(zsct, "table4", ("variant", "model")).itertuples():
        name = display_name(r.model, TABLE4_MODELS)
        yield "table4", "table4", r, name, name, TABLE4_MODELS.get(r.model)


def comparison_rows(probes_frame: pd.DataFrame, zsct: pd.DataFrame | None = None) -> list[dict]:
    """Table 1's PS row (a property of the speaker and the stimuli) and Appendix D.2 (of the stimuli): the paper's
    single values against our mean ± std over seeds; Tables 2 and 4, and Table 1's S = 1 and S = 2 rows (every
    measure of the learned speaker and listener): the paper's mean ± std against ours."""
    rows = []
    if zsct is not None and len(zsct):
        pub = published.tables()
        for result, experiment, r, row, _, setting in _zsct_rows(zsct):
            p = pub[(pub["table"] == result) & (pub["setting"] == setting)]
            if not len(p):  # the paper's numbers are R2D2's and its cores': a user's is in core.yours' table
                continue
            short = published.budget_reason(result, zsct[zsct["experiment"] == experiment]["observations"])
            rows.append(compare.row(
                benchmark="s2b", result=result, row=row, metric="acc_zsct",
                published=Interval.mean_std(float(p["mean"].iloc[0]), float(p["std"].iloc[0])),
                reproduced=Interval.mean_std(r.mean, r.std), n_runs=int(r.n_seeds),
                scale=curves.scale_label(zsct[zsct["experiment"] == experiment]), variant=r.variant,
                spread="mean ± std ranges", comparable=not short, not_comparable_because=short,
                deviation=compare.deviation(published.DEVIATIONS, result, row, "acc_zsct", r.variant)))
    if zsct is not None and len(zsct[zsct["experiment"] == "table1"]):
        runs = zsct[zsct["experiment"] == "table1"]
        short = published.budget_reason("table1", runs["observations"])
        for r in _table1_stats(zsct).itertuples():
            pub_metric, setting = TABLE1_MEASURES[r.metric], f"S={r.S}"
            paper = published.tables()
            p = paper[(paper["table"] == "table1") & (paper["metric"] == pub_metric) & (paper["setting"] == setting)]
            if not len(p):
                continue
            rows.append(compare.row(
                benchmark="s2b", result="table1", row=setting, metric=pub_metric,
                published=Interval.mean_std(float(p["mean"].iloc[0]), float(p["std"].iloc[0])),
                reproduced=Interval.mean_std(r.mean, r.std), n_runs=int(r.n_seeds), scale=curves.scale_label(runs),
                variant=r.variant, spread="mean ± std ranges", comparable=not short, not_comparable_because=short,
                deviation=compare.deviation(published.DEVIATIONS, "table1", setting, pub_metric, r.variant)))
    scale = curves.scale_label(probes_frame) if len(probes_frame) else ""
    speaker = probes_frame[probes_frame["experiment"] == "speaker"]
    for metric in ("topsim", "posdis", "bosdis"):
        s = speaker[speaker["metric"] == metric]
        if not len(s):
            continue
        # the paper's number is one episode's draw: is it inside the range of single episodes? Its own spread is
        # that of one draw, the range itself, so the verdict is informative once enough episodes give the range
        reproduced = Interval(100 * s["value"].mean(), 100 * s["low"].min(), 100 * s["high"].max())
        rows.append(compare.row(
            benchmark="s2b", result="table1", row="PS", metric=metric,
            published=Interval(_paper("table1", metric, "PS")), reproduced=reproduced, n_runs=int(s["n"].sum()),
            scale=scale, variant="faithful", spread="95% range of single episodes",
            published_width=reproduced.high - reproduced.low,
            deviation=compare.deviation(published.DEVIATIONS, "table1", "PS", metric, "faithful")))
    for r in _d2_rows(probes_frame):
        setting = "O=1" if r["O"] == 1 else "d=5"
        paper = _paper("d2", r["metric"], setting)
        if np.isnan(paper) or (setting == "d=5" and r["O"] != 4):  # the paper's main row: Table 1's O = 4
            continue
        variant = VARIANT_OF[r["protocol"]]
        rows.append(compare.row(
            benchmark="s2b", result="tableD2", row=f"O={r['O']}", metric=r["metric"], published=Interval(paper),
            reproduced=Interval.mean_std(r["mean"], r["std"]), n_runs=r["n_seeds"], scale=scale, variant=variant,
            spread="mean ± std over seeds",
            deviation=compare.deviation(published.DEVIATIONS, "tableD2", f"O={r['O']}", r["metric"], variant)))
    return rows


def yours_rows(zsct: pd.DataFrame | None) -> list[dict]:
    """Table 2's settings (O, S) in which a user's listener agent ran, beside R2D2, and Table 4 where a user's core ran,
    beside the Archi LSTM, ESBN and DCEM: ZSCT accuracy (%), mean ± std over seeds, with the paper's mean ± std for
    its own models, and the paper's cores that did not run here with their published numbers only."""
    if zsct is None or not len(zsct):
        return []
    pub = published.tables()

    def paper(table, setting):
        p = pub[(pub["table"] == table) & (pub["setting"] == setting)]
        return Interval.mean_std(float(p["mean"].iloc[0]), float(p["std"].iloc[0])) if len(p) else yours.NONE

    found = list(_zsct_rows(zsct))
    rows = []
    for result in ("table2", "table4"):
        mine = [f for f in found if f[0] == result]
        if not any(spec_of(f[2].model) for f in mine):
            continue
        scale = curves.scale_label(zsct[zsct["experiment"] == mine[0][1]])
        setting = (lambda r: f"O={r.n_oc} S={r.shots}") if result == "table2" else (lambda r: "Archi task")
        rows += [yours.row(result=result, setting=setting(r), metric="acc_zsct", variant=r.variant, model=name,
                           yours=spec_of(r.model) is not None, reproduced=Interval.mean_std(r.mean, r.std),
                           spread="mean ± std", n_runs=int(r.n_seeds), scale=scale,
                           published=paper(result, paper_setting) if paper_setting else yours.NONE)
                 for _, _, r, _, name, paper_setting in mine]
        if result == "table4":  # the paper's cores that did not run here: their published numbers only
            ran = {f[2].model for f in mine}
            rows += [yours.row(result=result, setting="Archi task", metric="acc_zsct", variant=variant, model=label,
                               yours=False, reproduced=yours.NONE, spread="—", n_runs=0, scale=scale,
                               published=paper(result, label))
                     for variant in dict.fromkeys(f[2].variant for f in mine)
                     for core, label in TABLE4_MODELS.items() if core not in ran]
    return rows
