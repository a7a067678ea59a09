"""Your model in the report (core.yours and each benchmark's yours_rows): the user's rows beside the paper's models of
the same setting, with the published numbers where the paper gives them; the table results/report.md shows."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from reprobench.core import yours
from reprobench.core.compare import Interval


def test_a_section_names_a_user_class_as_a_value_or_a_key_and_nothing_else_does():
    assert yours.names_user_class({"models": ["lstm", "tiny_user_wade:TinyGRU"]})
    assert yours.names_user_class({"experiments": {"seeds": {"table4": {"lstm": 2, "pkg.mod:Core": 2}}}})
    assert yours.names_user_class({"architecture": "scripted_atari:ScriptedAtari"})
    assert not yours.names_user_class({"architecture": "ppo", "games": ["pong"], "range": "1:2", "seeds": 3,
                                       "files": {"a": "data/x.txt"}})


def _row(setting, model, mine, value, metric="acc"):
    return yours.row(result="t", setting=setting, metric=metric, variant="faithful", model=model, yours=mine,
                     reproduced=Interval(value, value - 1, value + 1), spread="mean ± std", n_runs=3, scale="small")


def test_only_settings_with_a_user_row_are_kept_and_the_user_comes_first():
    rows = [_row("a", "LSTM", False, 1), _row("a", "Mine (yours)", True, 2), _row("b", "LSTM", False, 3),
            _row("c", "RNN", False, 4), _row("c", "Mine (yours)", True, 5), _row("a", "RNN", False, 6),
            _row("a", "LSTM", False, 7, metric="other")]
    frame = yours.select(rows)
    assert list(zip(frame["setting"], frame["model"], frame["value"])) == [
        ("a", "Mine (yours)", 2), ("a", "LSTM", 1), ("a", "RNN", 6), ("c", "Mine (yours)", 5), ("c", "RNN", 4)]
    assert yours.select([_row("a", "LSTM", False, 1)]).empty and yours.select([]).empty


def test_the_table_prints_intervals_runs_and_published_and_bolds_the_user(tmp_path):
    rows = [_row("a", "Mine (yours)", True, 2),
            yours.row(result="t", setting="a", metric="acc", variant="faithful", model="LSTM", yours=False,
                      reproduced=Interval(0.5), spread="none", n_runs=5, scale="small",
                      published=Interval(0.25, 0.125, 0.375))]
    yours.write_rows(rows, tmp_path / "yours.csv")
    files = yours.table(str(tmp_path / "yours.csv"), str(tmp_path / "tables/yours"))
    assert sorted(p.rsplit(".", 1)[1] for p in files) == ["csv", "md", "tex"]
    md = (tmp_path / "tables/yours.md").read_text()
    assert "| t | a | acc | faithful | **Mine (yours)** | 2 [1, 3] | mean ± std | 3 | — |" in md
    assert "| t | a | acc | faithful | LSTM | 0.5 | none | 5 | 0.25 [0.125, 0.375] |" in md
    assert "Scale: small." in md


def test_no_user_row_writes_a_header_and_a_table_that_says_so(tmp_path):
    yours.write_rows([_row("a", "LSTM", False, 1)], tmp_path / "yours.csv")
    assert pd.read_csv(tmp_path / "yours.csv").empty
    yours.table(str(tmp_path / "yours.csv"), str(tmp_path / "yours"))
    assert "No user's class ran" in (tmp_path / "yours.md").read_text()


# --- the benchmarks' rows -----------------------------------------------------------------------------------------


def _arith_group(model, operation="add", experiment="operations", success=1.0, **extra):
    return {"experiment": experiment, "model": model, "operation": operation, "input_size": 100, "hidden_size": 2,
            "overlap": 0.5, "subset": 0.25, "interpolation": "1_2", "extrapolation": "2_6", "variant": "faithful",
            "n_runs": 2, "scale": "small", "success": success, "success_low": 0.34, "success_high": 1.0,
            "solved_at_median": 1000.0, "solved_at_mean": 1100.0, "solved_at_low": 900.0, "solved_at_high": 1300.0,
            "sparsity_error": math.nan, "sparsity_low": math.nan, "sparsity_high": math.nan, "iterations": 1500,
            **extra}


def test_arith_rows_put_the_users_unit_beside_the_paper_models_of_its_operation_with_the_published_numbers():
    from reprobench.arith.render import yours_rows

    groups = pd.DataFrame([_arith_group("linear"), _arith_group("tiny_user_arith.ExactAdd"),
                           _arith_group("nac_add", operation="sub")])
    frame = yours.select(yours_rows(groups))
    # Linear ran beside the user's unit; the paper's NAC+ and NALU on addition did not: their published numbers only
    assert list(dict.fromkeys(frame["model"])) == ["ExactAdd (yours)", "Linear", "NAC+", "NALU"]
    nalu = frame[frame["model"] == "NALU"].set_index("metric")
    assert (nalu["n_runs"] == 0).all() and nalu["value"].isna().all()
    assert nalu.loc["success", ["published", "published_low", "published_high"]].tolist() == pytest.approx(
        [0.14, 0.09, 0.22])  # 14% (+8/-5)
    assert set(frame["setting"]) == {"add"}  # subtraction had no user's unit
    assert list(frame[frame["model"] == "Linear"]["metric"]) == ["success", "solved_at_median", "solved_at_mean",
                                                                 "sparsity_error"]
    linear = frame[frame["model"] == "Linear"].set_index("metric")
    # the paper's Linear on addition: 100% (+0/-4), median 6.1e4, mean 6.3e4 (+2.5e3/-3.3e3), sparsity 2.5e-1
    assert linear.loc["success", ["published", "published_low", "published_high"]].tolist() == [1.0, 0.96, 1.0]
    assert linear.loc["solved_at_median", "published"] == 6.1e4
    assert linear.loc["solved_at_mean", ["published_low", "published_high"]].tolist() == [6.3e4 - 3.3e3, 6.3e4 + 2.5e3]
    mine = frame[frame["yours"]].set_index("metric")
    assert mine["published"].isna().all() and mine.loc["success", ["value", "low", "high"]].tolist() == [1.0, 0.34, 1.0]


def test_arith_rows_of_a_sweep_point_read_the_published_figure_for_multiplication():
    from reprobench.arith.render import yours_rows

    groups = pd.DataFrame([_arith_group(m, operation="mul", experiment="input_size", input_size=4)
                           for m in ("nac_mul", "tiny_user_arith.ExactAdd")])
    frame = yours.select(yours_rows(groups))
    assert list(frame["setting"].unique()) == ["mul, input_size=4"] and set(frame["metric"]) == {"success"}
    nac = frame[frame["model"] == "NAC•"]
    assert len(nac) == 1 and not math.isnan(nac["published"].iloc[0])


def test_wade_rows_put_the_users_model_beside_the_papers_on_its_tasks_and_on_imdb():
    from reprobench.wade import render

    runs = pd.DataFrame([{"task": task, "task_name": "t", "model": m, "config": "default", "seed": s,
                          "variant": "faithful", "wade": w + s / 10, "max_accuracy": 0.5, "final_accuracy": 0.5,
                          "scale": "small"}
                         for task, models in ((5, ("rnn", "tiny_user_wade.TinyGRU")), (1, ("rnn",)))
                         for m, w in zip(models, (0.2, 0.4)) for s in (0, 1)])
    mean_curves = pd.DataFrame([{"task": t, "model": m, "config": "default", "step": k, "sequences": k,
                                 "mean": 0.25 * k, "std": 0.01, "n": 2}
                                for t, m in ((5, "rnn"), (5, "tiny_user_wade.TinyGRU"), (1, "rnn")) for k in (1, 2)])
    imdb = pd.DataFrame([{"model": m, "seed": s, "variant": "faithful", "wade_x100": 1.0 + s, "max_accuracy": 0.5,
                          "synthetic": True, "scale": "tiny"} for m in ("lstm", "tiny_user_wade.TinyClassifier")
                         for s in (0, 1)])
    frame = yours.select(render.yours_rows(runs, render.accuracy_frame(runs, mean_curves), imdb))
    assert list(dict.fromkeys(zip(frame["result"], frame["setting"]))) == [("table4", "task 5"), ("table5", "task 5"),
                                                                          ("table2", "IMDB")]
    t4 = frame[frame["result"] == "table4"].set_index("model")
    assert list(t4.index) == ["TinyGRU (yours)", "RNN"]
    # the paper's RNN on Basic QA: WADE 0.20 ± 0.06; ours 0.2 and 0.3: mean 0.25, population std 0.05
    assert t4.loc["RNN", ["published_low", "published_high"]].tolist() == pytest.approx([0.14, 0.26])
    assert t4.loc["TinyGRU (yours)", ["value", "low", "high"]].tolist() == pytest.approx([0.45, 0.4, 0.5])
    imdb_rows = frame[frame["result"] == "table2"].set_index(["model", "metric"])
    # the paper's LSTM on IMDB: WADE x100 2.280 ± 0.303
    assert imdb_rows.loc[("LSTM", "wade_x100"), "published"] == 2.28
    assert "synthetic data" in imdb_rows["scale"].iloc[0] and imdb_rows.loc[("TinyClassifier (yours)",
                                                                             "wade_x100"), "n_runs"] == 2


def test_calm_rows_put_the_users_model_beside_the_papers_in_its_table1_setting():
    from reprobench.calm import render

    def run(model, seed, lam, ppl, split="test"):
        return {"dataset": "multilingual", "lambda": lam, "model": model, "variant": "faithful", "seed": seed,
                "split": split, "total_pp": ppl, "ppl@sw": 2 * ppl, "rec": 1.0, "synthetic": False, "scale": "small"}

    runs = pd.DataFrame([run("poe_pw_30", 0, 10_000, 7.0), run("poe_pw_30", 1, 10_000, 9.0),
                         run("tiny_user_lm:TinyLM", 0, 10_000, 5.0), run("tiny_user_lm:TinyLM", 1, 10_000, 6.0),
                         run("poe_pw_30", 0, 100_000, 4.0),  # no user's model at this λ
                         run("transformer", 0, 10_000, 50.0, split="dev")])  # Appendix C's, not Table 1's
    frame = yours.select(render.yours_rows(runs))
    assert set(frame["setting"]) == {"multilingual λ=10k"} and list(dict.fromkeys(frame["model"])) == [
        "TinyLM (yours)", "PoE+PW 30"]
    poe = frame[(frame["model"] == "PoE+PW 30")].set_index("metric")
    # ours: 7 and 9, mean 8, std (ddof 1) sqrt(2); the paper's PoE+PW 30 at 10k: ppl 7.41 ± 0.21, ppl@sw 9.17 ± 0.2
    assert poe.loc["ppl", ["value", "high"]].tolist() == pytest.approx([8.0, 8 + 2**0.5])
    assert poe.loc["ppl", ["published", "published_low"]].tolist() == pytest.approx([7.41, 7.2])
    assert poe.loc["ppl_at_switch", "published"] == 9.17 and poe.loc["ppl_at_switch", "value"] == 16.0
    assert frame[frame["yours"]]["published"].isna().all()


def test_s2b_rows_put_a_users_agent_beside_r2d2_and_a_users_core_beside_the_archi_cores():
    from reprobench.s2b import render
    from reprobench.s2b.summary import COLUMNS, ZSCT_COLUMNS

    def run(experiment, model, seed, accuracy, n_oc=1, shots=1):
        return dict.fromkeys(ZSCT_COLUMNS, math.nan) | {
            "experiment": experiment, "model": model, "n_oc": n_oc, "shots": shots, "variant": "faithful",
            "seed": seed, "observations": 300, "zsct_accuracy": accuracy, "scale": "tiny"}

    zsct = pd.DataFrame([run("zsct", "r2d2", 0, 0.5), run("zsct", "r2d2", 1, 0.7),
                         run("zsct", "scripted_listener.PerfectListener", 0, 1.0),
                         run("zsct", "scripted_listener.PerfectListener", 1, 1.0),
                         run("zsct", "r2d2", 0, 0.5, n_oc=4),  # no user's agent at O = 4
                         run("table4", "lstm", 0, 0.6), run("table4", "lstm", 1, 0.8),
                         run("table4", "tiny_user_s2b_core.TinyGRUCore", 0, 0.5),
                         run("table4", "tiny_user_s2b_core.TinyGRUCore", 1, 0.5)])
    frame = yours.select(render.yours_rows(zsct)).set_index(["result", "model"])
    # ESBN and DCEM did not run: the paper's numbers only (89.35 ± 2.77, 81.90 ± 0.59)
    assert list(frame.index) == [("table2", "PerfectListener (yours)"), ("table2", "R2D2"),
                                 ("table4", "TinyGRUCore (yours)"), ("table4", "LSTM"), ("table4", "ESBN"),
                                 ("table4", "DCEM")]
    assert frame.loc[("table4", "DCEM"), ["n_runs", "published", "published_high"]].tolist() == pytest.approx(
        [0, 81.9, 82.49]) and math.isnan(frame.loc[("table4", "ESBN"), "value"])
    # the paper's R2D2 at O=1 S=1: 62.23 ± 3.67; its Archi LSTM: 86.00 ± 0.14; ours in %, std ddof 1
    assert frame.loc[("table2", "R2D2"), ["value", "published", "published_high"]].tolist() == pytest.approx(
        [60.0, 62.23, 65.9])
    assert frame.loc[("table4", "LSTM"), ["published", "published_low"]].tolist() == pytest.approx([86.0, 85.86])
    assert frame.loc[("table4", "LSTM"), "high"] == pytest.approx(70 + 100 * 0.02**0.5)
    assert frame[frame["yours"]]["published"].isna().all()
    # a user's agent is not compared with the paper's R2D2 numbers (it was, as "O=1 S=1 (model)", before)
    compared = render.comparison_rows(pd.DataFrame(columns=COLUMNS), zsct)
    assert [(r["result"], r["row"], r["reproduced"]) for r in compared if r["result"] == "table2"] == [
        ("table2", "O=1 S=1", pytest.approx(60.0)), ("table2", "O=4 S=1", 50.0)]


def test_amtlb_rows_exist_only_for_a_users_architecture_and_list_the_random_and_published_agents():
    from reprobench.amtlb import render

    scores = pd.DataFrame([{"game": "pong", "seed": s, "run": run, "episodes": 3, "last100": v + s, "best": v,
                            "c_final": 10 * v, "scale": "tiny"}
                           for run, v in (("specialist", -20.0), ("generalist", -21.0), ("random", -21.0))
                           for s in (0, 1)])
    assert render.yours_rows(scores, 1200, "ppo") == []  # the benchmark's own architecture: no "your model" table
    frame = yours.select(render.yours_rows(scores, 1200, "scripted_atari:ScriptedAtari"))
    last100 = frame[frame["metric"] == "train_return_last100"].set_index("model")
    assert list(last100.index[:3]) == ["ScriptedAtari (yours), fresh on the game", "ScriptedAtari (yours), generalist",
                                       "random agent"]
    assert last100.loc["ScriptedAtari (yours), fresh on the game", ["value", "low", "high"]].tolist() == [
        -19.5, -20.0, -19.0]
    # the published agents at their own frame counts: rl-baselines3-zoo's PPO on Pong, 19.3 at 10M frames
    assert last100.loc["PPO (sb3_zoo_monitor, 10,000,000 frames)", "published"] == 19.3
    assert math.isnan(last100.loc["PPO (sb3_zoo_monitor, 10,000,000 frames)", "value"])
    assert set(frame["setting"]) == {"pong, 1,200 frames"}
