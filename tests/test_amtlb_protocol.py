"""AMTLB protocol: folds and trials, the frame clock and C(t), the ratio variants on hand-made curves, the two-level
average, absolute scores, the frames a protocol implies, and the published reference numbers. Expected values are
worked out by hand in the comments."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from reprobench.amtlb.protocol import (
    BenchmarkParms,
    absolute_scores,
    cumulative,
    cumulative_by_game,
    faithful,
    fold_means,
    frame_grid,
    frames_implied,
    measures_frame,
    normalised,
    r,
    ratio,
    transfer_measures,
    transfer_table,
)
from reprobench.core.errors import ConfigError, ResultsFileError
from reprobench.core.published import read_csv

# specs/amtlb.md 1.4, in that order
AMTLB_GAMES = tuple(
    "air_raid alien amidar assault asterix asteroids atlantis bank_heist battle_zone beam_rider berzerk bowling boxing "
    "breakout carnival centipede chopper_command crazy_climber demon_attack double_dunk elevator_action enduro "
    "fishing_derby freeway frostbite gopher gravitar ice_hockey jamesbond journey_escape kangaroo krull "
    "kung_fu_master montezuma_revenge ms_pacman name_this_game phoenix pitfall pong pooyan private_eye qbert "
    "riverraid road_runner robotank seaquest skiing solaris space_invaders star_gunner tennis time_pilot tutankham "
    "up_n_down venture video_pinball wizard_of_wor yars_revenge zaxxon".split())


def games(n):
    return tuple(f"game{i:02d}" for i in range(n))


def test_the_spec_lists_59_games():
    assert len(AMTLB_GAMES) == len(set(AMTLB_GAMES)) == 59


# --- folds and trials -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n, k, sizes", [(2, 2, [1, 1]), (5, 2, [3, 2]), (5, 5, [1] * 5), (7, 3, [3, 2, 2]),
                                         (10, 4, [3, 3, 2, 2]), (59, 5, [12, 12, 12, 12, 11])])
def test_kfold_tests_every_game_exactly_once_in_near_equal_folds(n, k, sizes):
    parms = BenchmarkParms(games(n), folds=k, seed=3)
    folds = parms.partition()
    assert len(folds) == k
    assert sorted(len(f) for f in folds) == sorted(sizes)
    assert sorted(g for f in folds for g in f) == list(games(n))
    for i, test in enumerate(folds):
        assert list(test) == sorted(test, key=parms.games.index)  # games order
        train = parms.training_games(i)
        assert set(train).isdisjoint(test) and len(train) + len(test) == n
        assert list(train) == [g for g in parms.games if g not in test]


def test_the_59_games_in_5_folds():
    parms = BenchmarkParms(AMTLB_GAMES, folds=5, seed=0)
    folds = parms.partition()
    assert sorted(g for f in folds for g in f) == sorted(AMTLB_GAMES)
    assert sorted(len(parms.training_games(i)) for i in range(5)) == [47, 47, 47, 47, 48]


def test_partition_depends_on_the_seed_only():
    a = BenchmarkParms(AMTLB_GAMES, folds=5, seed=11)
    assert a.partition() == BenchmarkParms(AMTLB_GAMES, folds=5, seed=11, frames_per_game=1000).partition()
    assert a.partition() != BenchmarkParms(AMTLB_GAMES, folds=5, seed=12).partition()
    rand = BenchmarkParms(AMTLB_GAMES, split="random", folds=3, seed=11)
    assert rand.partition() == BenchmarkParms(AMTLB_GAMES, split="random", folds=3, seed=11).partition()
    assert rand.partition() != BenchmarkParms(AMTLB_GAMES, split="random", folds=3, seed=12).partition()


@pytest.mark.parametrize("n, fraction, size", [
    (59, 0.3, 18),   # 17.7 -> 18: the spec's 18 test / 41 training games
    (5, 0.3, 2),     # 1.5 -> 2 (half up): the README's example, X and Y held out of S U V X Y
    (15, 0.3, 5),    # 4.5 -> 5 (half up, where Python's round() would give 4)
    (10, 0.35, 4),   # 3.5 (computed as 3.4999999999999996) -> 4
    (10, 0.3, 3),
    (10, 0.01, 1),   # 0.1 -> 0, at least one test game
    (10, 0.99, 9),   # 9.9 -> 10, at most n - 1 so that one game is left to pre-train on
])
def test_random_trials_hold_out_the_right_number_of_games(n, fraction, size):
    parms = BenchmarkParms(games(n), split="random", folds=4, test_fraction=fraction, seed=5)
    trials = parms.partition()
    assert len(trials) == 4
    for i, test in enumerate(trials):
        assert len(test) == len(set(test)) == size
        train = parms.training_games(i)
        assert set(train).isdisjoint(test)
        assert set(train) | set(test) == set(games(n))


def test_random_trials_are_independent_draws_that_do_not_depend_on_how_many_follow():
    parms = BenchmarkParms(AMTLB_GAMES, split="random", folds=4, seed=2)
    trials = parms.partition()
    assert len(set(trials)) == 4  # four different 18-game samples (C(59, 18) ~ 1e15: a repeat would be a bug)
    assert BenchmarkParms(AMTLB_GAMES, split="random", folds=2, seed=2).partition() == trials[:2]


def test_training_games_rejects_a_fold_out_of_range():
    with pytest.raises(ValueError, match="fold 2"):
        BenchmarkParms(games(4), folds=2).training_games(2)


def test_json_round_trip(tmp_path):
    parms = BenchmarkParms(games(7), split="random", folds=3, test_fraction=0.4, seed=9, frames_per_game=50_000,
                           max_steps_without_reward=None)
    path = tmp_path / "sub" / "parameters.json"
    parms.save(path)
    record = json.loads(path.read_text())
    assert record["folds"] == [list(f) for f in parms.partition()]
    assert (record["seed"], record["num_folds"], record["split"], record["games"], record["frames_per_game"]) == \
        (9, 3, "random", list(games(7)), 50_000)
    assert BenchmarkParms.load(path) == parms
    assert path.read_text() == parms.to_json()
    assert not [p for p in path.parent.iterdir() if p.name != "parameters.json"]  # no temporary file left


def test_load_refuses_bad_files(tmp_path):
    parms = BenchmarkParms(games(6), folds=3, seed=1)
    record = parms.to_dict()
    tampered = dict(record, folds=[record["folds"][1], record["folds"][0], record["folds"][2]])
    (tmp_path / "tampered.json").write_text(json.dumps(tampered))
    with pytest.raises(ResultsFileError, match="differ"):
        BenchmarkParms.load(tmp_path / "tampered.json")
    (tmp_path / "partial.json").write_text(json.dumps({k: v for k, v in record.items() if k != "seed"}))
    with pytest.raises(ResultsFileError, match="seed"):
        BenchmarkParms.load(tmp_path / "partial.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ResultsFileError, match="bad.json"):
        BenchmarkParms.load(tmp_path / "bad.json")
    (tmp_path / "invalid.json").write_text(json.dumps(dict(record, num_folds=9)))
    with pytest.raises(ResultsFileError, match="9 folds for 6 games"):
        BenchmarkParms.load(tmp_path / "invalid.json")


@pytest.mark.parametrize("kwargs, key, words", [
    (dict(games=games(4), folds=5), "amtlb.folds", ["5 folds", "4 games", "folds <= 4"]),
    (dict(games=games(4), folds=1), "amtlb.folds", ["1 fold", "pre-train"]),
    (dict(games=games(4), split="random", folds=0), "amtlb.folds", ["positive"]),
    (dict(games=games(1), folds=1), "amtlb.games", ["1 game", "at least 2"]),
    (dict(games=(), folds=2), "amtlb.games", ["0 game"]),
    (dict(games=("pong", "breakout", "pong", "qbert"), folds=2), "amtlb.games", ["duplicate", "pong"]),
    (dict(games=games(4), split="random", test_fraction=0.0), "amtlb.test_fraction", ["between 0 and 1"]),
    (dict(games=games(4), split="random", test_fraction=1.0), "amtlb.test_fraction", ["between 0 and 1"]),
    (dict(games=games(4), test_fraction=-0.2, folds=2), "amtlb.test_fraction", ["-0.2"]),
    (dict(games=games(4), split="loo", folds=2), "amtlb.split", ["loo", "kfold"]),
    (dict(games=games(4), folds=2, seed=-1), "amtlb.partition_seed", ["-1"]),
    (dict(games=games(4), folds=2, frames_per_game=0), "amtlb.frames_per_game", ["positive"]),
    (dict(games=games(4), folds=2, max_steps_without_reward=0), "amtlb.atari.max_steps_without_reward", ["0"]),
])
def test_check_names_the_key(kwargs, key, words):
    parms = BenchmarkParms(**kwargs)
    with pytest.raises(ConfigError) as err:
        parms.check()
    assert err.value.key == key
    for word in words:
        assert word in str(err.value)
    with pytest.raises(ConfigError):  # partition() checks first
        parms.partition()


def test_check_uses_the_key_prefix_and_accepts_leave_one_out():
    with pytest.raises(ConfigError) as err:
        BenchmarkParms(games(3), folds=4).check("tiny")
    assert err.value.key == "tiny.folds"
    assert [len(f) for f in BenchmarkParms(games(3), folds=3).partition()] == [1, 1, 1]


# --- frame clock and C(t) -------------------------------------------------------------------------------------------
def test_frame_grid():
    assert frame_grid(100, 4).tolist() == [25, 50, 75, 100]
    assert frame_grid(10, 3).tolist() == [3, 6, 10]  # 10/3, 20/3 floored; the last point is the budget
    assert frame_grid(10_000_000, 1).tolist() == [10_000_000]
    assert frame_grid(10, 10).dtype == np.int64
    with pytest.raises(ConfigError, match="11"):
        frame_grid(10, 11)
    with pytest.raises(ConfigError) as err:
        frame_grid(10, 0, key="amtlb.points")
    assert err.value.key == "amtlb.points"


def test_cumulative_score_counts_every_reward_up_to_t():
    # a game's rewards by frame (the log: frame after the step, rewards summed so far): +2 at 10, -1 at 20 (sum 1),
    # +4 at 20 again (a second step ending at the same frame can't happen, but a sum is a sum: 5), +5 at 30 (10),
    # +10 at 50 (20)
    frames, sums = [0, 10, 20, 20, 30, 50], [0.0, 2.0, 1.0, 5.0, 10.0, 20.0]
    grid = [5, 10, 20, 25, 30, 50, 60]
    # t=5: nothing yet; 10: 2; 20: the last entry at 20, 5; 25: 5; 30: 10; 50 and 60: 20
    assert cumulative(frames, sums, grid).tolist() == [0.0, 2.0, 5.0, 5.0, 10.0, 20.0, 20.0]
    assert cumulative([], [], [1, 2]).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="2 frames but 3 sums"):
        cumulative([1, 2], [1.0, 2.0, 3.0], [5])
    with pytest.raises(ValueError, match="NaN"):
        cumulative([1], [float("nan")], [5])
    with pytest.raises(ValueError, match="decrease"):
        cumulative([10, 5], [1.0, 2.0], [5])


def test_a_quota_cut_episode_counts_its_rewards():
    """One slot, budget 100 frames: an episode of +3 (ends at frame 60), then one the quota cuts at frame 104 after
    +1 at frame 70 and +2 at 90 (and +1 in the last step, at 104, past the budget). Counting finished episodes only,
    C(100) would be 3; every reward up to frame 100 gives 3 + 1 + 2 = 6."""
    frames, sums = [0, 40, 60, 70, 90, 104], [0.0, 1.0, 3.0, 4.0, 6.0, 7.0]
    assert cumulative(frames, sums, [50, 100]).tolist() == [1.0, 6.0]


def test_cumulative_by_game_uses_each_games_own_clock():
    # a generalist's rewards by frame: each game's frames count frames of that game only
    rewards = pd.DataFrame({"game": ["pong", "breakout", "pong", "breakout", "pong", "breakout"],
                            "frame": [0, 0, 40, 30, 100, 90], "cumulative": [0.0, 0.0, -21.0, 2.0, -40.0, 7.0]})
    out = cumulative_by_game(rewards, [50, 100])
    assert out.columns.tolist() == ["game", "t", "cumulative"]
    got = {(g, t): c for g, t, c in out.itertuples(index=False)}
    assert got == {("breakout", 50): 2.0, ("breakout", 100): 7.0, ("pong", 50): -21.0, ("pong", 100): -40.0}


# --- the ratios ---------------------------------------------------------------------------------------------------
NAN = float("nan")


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a, float), np.asarray(b, float))  # NaN equals NaN here


def test_ratio_r_and_faithful_on_hand_made_curves():
    # points: zero fresh score; |fresh| below eps = 1; plain positive; both negative with pre better (Pong early);
    # opposite signs (pre positive, fresh negative); opposite signs (pre negative, fresh positive); fresh exactly eps
    c_fresh = [0.0, 0.5, 10.0, -20.0, -20.0, 10.0, 1.0]
    c_pre = [5.0, 3.0, 15.0, -10.0, 10.0, -5.0, 2.0]
    q = ratio(c_pre, c_fresh)
    same(q.value, [NAN, NAN, 1.5, 0.5, -0.5, -0.5, 2.0])
    assert q.undefined.tolist() == [True, True, False, False, False, False, False]
    assert q.sign_flip.tolist() == [False, False, False, True, True, False, False]
    g = r(c_pre, c_fresh)
    same(g.value, [NAN, NAN, 0.5, -0.5, -1.5, -1.5, 1.0])
    assert g.undefined.tolist() == q.undefined.tolist() and g.sign_flip.tolist() == q.sign_flip.tolist()
    # the README's literal 1 - B/A: the opposite sign to r
    f = faithful(c_pre, c_fresh)
    same(f.value, [NAN, NAN, -0.5, 0.5, 1.5, 1.5, -1.0])
    assert f.sign_flip.tolist() == q.sign_flip.tolist()
    # a smaller eps lets the half-point fresh score through: 3 / 0.5 = 6
    same(ratio(c_pre, c_fresh, eps=0.25).value[:2], [NAN, 6.0])
    with pytest.raises(ValueError, match="eps"):
        ratio(c_pre, c_fresh, eps=0.0)


def test_ratio_of_a_zero_over_negative_is_plain_zero():
    assert math.copysign(1.0, ratio([0.0], [-4.0]).value[0]) == 1.0  # no -0.0 written to files


def test_normalised_ratio_on_hand_made_curves():
    # A: both above random: (10 + 5) / (5 + 5) = 1.5
    # B: Pong-like, all negative: (-15 + 21) / (-18 + 21) = 2 (the plain ratio -15/-18 = 0.83 reads backwards)
    # C: fresh equal to random: undefined
    # D: fresh worse than random: (0 + 20) / (-30 + 20) = -2, sign flip
    # E: all zero (Montezuma): undefined
    # F: fresh half a point above random: undefined at eps = 1
    c_pre = [10.0, -15.0, 3.0, 0.0, 0.0, 7.0]
    c_fresh = [5.0, -18.0, -2.0, -30.0, 0.0, 1.5]
    c_rand = [-5.0, -21.0, -2.0, -20.0, 0.0, 1.0]
    n = normalised(c_pre, c_fresh, c_rand)
    same(n.value, [1.5, 2.0, NAN, -2.0, NAN, NAN])
    assert n.undefined.tolist() == [False, False, True, False, True, True]
    assert n.sign_flip.tolist() == [False, False, False, True, False, False]
    assert ratio(c_pre[1], c_fresh[1]).sign_flip.item()


def test_transfer_measures_and_measures_frame():
    m = transfer_measures([2.0], [4.0])
    assert sorted(m) == ["faithful", "r", "ratio"]
    assert (m["ratio"].value[0], m["r"].value[0], m["faithful"].value[0]) == (0.5, -0.5, 0.5)
    frame = measures_frame(1, "pong", [10, 20], [2.0, -6.0], [4.0, -3.0], c_rand=[0.0, -9.0], seed=0)
    assert frame.columns.tolist() == ["fold", "game", "seed", "t", "measure", "value", "undefined", "sign_flip",
                                      "c_pre", "c_fresh", "c_rand"]
    got = {(row.measure, row.t): (row.value, row.sign_flip) for row in frame.itertuples()}
    # t=20: ratio -6/-3 = 2 (sign flip), r = 1, faithful = -1, normalised (-6 + 9) / (-3 + 9) = 0.5
    assert got == {("ratio", 10): (0.5, False), ("ratio", 20): (2.0, True), ("r", 10): (-0.5, False),
                   ("r", 20): (1.0, True), ("faithful", 10): (0.5, False), ("faithful", 20): (-1.0, True),
                   ("normalised", 10): (0.5, False), ("normalised", 20): (0.5, False)}
    assert measures_frame(0, "pong", [10], [1.0], [2.0])["c_rand"].isna().all()


# --- averaging ----------------------------------------------------------------------------------------------------
def two_folds():
    # t=10: fold 0 tests a (4) and b (undefined); fold 1 tests c (1) and d (3)
    # t=20: fold 0 has nothing defined; fold 1: c = 2, d undefined
    rows = [(0, "a", 10, 4.0, False), (0, "b", 10, NAN, True), (1, "c", 10, 1.0, False), (1, "d", 10, 3.0, False),
            (0, "a", 20, NAN, True), (0, "b", 20, NAN, True), (1, "c", 20, 2.0, False), (1, "d", 20, NAN, True)]
    frame = pd.DataFrame(rows, columns=["fold", "game", "t", "value", "undefined"])
    frame["measure"] = "r"
    frame["sign_flip"] = False
    return frame


def test_two_level_average_over_games_then_folds():
    folds = fold_means(two_folds()).set_index(["fold", "t"])
    assert folds.loc[(0, 10), ["mean", "n_games", "n_test", "n_undefined"]].tolist() == [4.0, 1, 2, 1]
    assert folds.loc[(1, 10), ["mean", "n_games", "n_test", "n_undefined"]].tolist() == [2.0, 2, 2, 0]
    assert math.isnan(folds.loc[(0, 20), "mean"])
    table = transfer_table(two_folds()).set_index(["t", "measure"])
    row = table.loc[(10, "r")]
    # fold means 4 and 2: mean 3 (the pooled mean of 4, 1, 3 would be 8/3), sd sqrt(((4-3)^2 + (2-3)^2) / 1)
    assert row["mean"] == 3.0
    assert row["fold_sd"] == pytest.approx(math.sqrt(2))
    assert (row["fold_min"], row["fold_max"], row["n_folds"]) == (2.0, 4.0, 2)
    # games 4, 1, 3: mean 8/3, squared deviations 16/9 + 25/9 + 1/9 = 42/9, over 2: 7/3
    assert row["game_sd"] == pytest.approx(math.sqrt(7 / 3))
    assert (row["game_min"], row["game_max"], row["n_games"], row["n_values"], row["n_undefined"]) == \
        (1.0, 4.0, 3, 4, 1)
    row = table.loc[(20, "r")]
    assert (row["mean"], row["n_folds"], row["n_games"], row["n_undefined"]) == (2.0, 1, 1, 3)
    assert math.isnan(row["fold_sd"])


def test_averages_leave_out_sign_flips_by_default_and_average_seeds_first():
    frame = two_folds()
    frame.loc[(frame.game == "d") & (frame.t == 10), "sign_flip"] = True
    row = transfer_table(frame).set_index(["t", "measure"]).loc[(10, "r")]
    # fold 1 is then c alone: (4 + 1) / 2; 2 games averaged, 1 flip and 1 undefined counted
    assert (row["mean"], row["n_games"], row["n_sign_flip"], row["n_undefined"]) == (2.5, 2, 1, 1)
    assert transfer_table(frame, exclude_sign_flip=False).set_index(["t", "measure"]).loc[(10, "r"), "mean"] == 3.0
    # two seeds of game a (2 and 6) count as one game of value 4
    seeds = pd.concat([two_folds().assign(seed=0), two_folds().assign(seed=1)], ignore_index=True)
    seeds.loc[(seeds.game == "a") & (seeds.t == 10), "value"] = [2.0, 6.0]
    row = transfer_table(seeds).set_index(["t", "measure"]).loc[(10, "r")]
    assert (row["mean"], row["n_games"], row["n_values"]) == (3.0, 3, 4)
    with pytest.raises(ValueError, match="duplicate"):
        transfer_table(pd.concat([two_folds(), two_folds()]))


def test_average_of_measures_frame_rows():
    # fold 0: game x ratio 15/10 = 1.5; fold 1: y 8/4 = 2, z fresh score 0 (undefined) -> means 1.5 and 2 -> 1.75
    frame = pd.concat([measures_frame(0, "x", [100], [15.0], [10.0]), measures_frame(1, "y", [100], [8.0], [4.0]),
                       measures_frame(1, "z", [100], [3.0], [0.0])], ignore_index=True)
    table = transfer_table(frame).set_index(["t", "measure"])
    assert table.loc[(100, "ratio"), "mean"] == 1.75
    assert table.loc[(100, "r"), "mean"] == 0.75
    assert table.loc[(100, "faithful"), "mean"] == -0.75
    assert table.loc[(100, "ratio"), "n_undefined"] == 1


def test_a_sign_flip_reads_backwards_and_is_left_out():
    """Pong, C_pre = -27 (better) over C_fresh = -41: ratio 27/41 = 0.6585, r = -0.3415 reads as "transfer hurt",
    flagged; with another test game of ratio 2 the fold's mean is 2 (the flipped value left out, counted)."""
    frame = pd.concat([measures_frame(0, "pong", [100], [-27.0], [-41.0]),
                       measures_frame(0, "breakout", [100], [20.0], [10.0])], ignore_index=True)
    pong = frame[(frame.game == "pong") & (frame.measure == "r")].iloc[0]
    assert pong["value"] == pytest.approx(27 / 41 - 1) and pong["sign_flip"]
    row = transfer_table(frame).set_index(["t", "measure"]).loc[(100, "ratio")]
    assert (row["mean"], row["n_games"], row["n_sign_flip"], row["n_values"]) == (2.0, 1, 1, 2)
    kept = transfer_table(frame, exclude_sign_flip=False).set_index(["t", "measure"]).loc[(100, "ratio")]
    assert kept["mean"] == pytest.approx((27 / 41 + 2) / 2)


# --- multitask ------------------------------------------------------------------------------------------------------
def test_absolute_scores():
    assert absolute_scores(np.arange(150.0)) == (99.5, 149.0)  # mean of 50..149, best 149
    assert absolute_scores([10.0, 0.0, 0.0]) == (pytest.approx(10 / 3), 10.0)  # fewer than 100: all of them
    assert absolute_scores([3.0, -1.0, 5.0], last=2) == (2.0, 5.0)
    mean, best = absolute_scores([])
    assert math.isnan(mean) and math.isnan(best)
    with pytest.raises(ValueError, match="last"):
        absolute_scores([1.0], last=0)


# --- cost -----------------------------------------------------------------------------------------------------------
def test_frames_implied_by_the_paper_protocol():
    parms = BenchmarkParms(AMTLB_GAMES, folds=5, seed=0, frames_per_game=10_000_000)
    got = frames_implied(parms)
    # folds of 12, 12, 12, 12, 11 test games: 47 * 4 + 48 = 236 training game-runs of 10M frames
    assert got == {"fresh": 590_000_000, "random": 590_000_000, "pretraining": 2_360_000_000,
                   "transfer": 590_000_000, "generalist": 590_000_000, "total": 4_720_000_000}
    # without the random agent (emulator only): 0.59 + 2.36 + 0.59 + 0.59 = 4.13B, the spec's upper figure
    assert frames_implied(parms, random_baselines=False)["total"] == 4_130_000_000
    assert frames_implied(parms, generalist=False, random_baselines=False)["total"] == 3_540_000_000
    # the README's 3 random 30/70 trials: 3 * (41 + 18) * 10M = 1.77B, plus 0.59B baselines and 0.59B generalist
    trials = BenchmarkParms(AMTLB_GAMES, split="random", folds=3, seed=0, frames_per_game=10_000_000)
    got = frames_implied(trials, random_baselines=False)
    assert (got["pretraining"], got["transfer"], got["total"]) == (1_230_000_000, 540_000_000, 2_950_000_000)


def test_frames_implied_at_a_tiny_scale():
    # 5 games, 2 folds (3 + 2 test games), 1000 frames: fresh 5000, random 5000, pre-training (2 + 3) * 1000,
    # transfer 5000, generalist 5000
    got = frames_implied(BenchmarkParms(games(5), folds=2, frames_per_game=1000))
    assert got == {"fresh": 5000, "random": 5000, "pretraining": 5000, "transfer": 5000, "generalist": 5000,
                   "total": 25000}


# --- published reference numbers -----------------------------------------------------------------------------------
def reference():
    return read_csv("reprobench.amtlb", "reference_scores.csv")


@pytest.mark.parametrize("source, agent, game, frames, measure, value", [
    ("sb3_zoo_monitor", "PPO", "breakout", 10_000_000, "train_return_last100", 80.5),
    ("sb3_zoo_monitor", "PPO", "pong", 10_000_000, "cumulative_return", -6357),
    ("sb3_zoo_monitor", "PPO", "road_runner", 10_000_000, "cumulative_return", 48_199_600),
    ("sb3_zoo_monitor", "A2C", "enduro", 10_000_000, "train_return_last100", 0.0),
    ("sb3_zoo_monitor", "PPO", "space_invaders", 40_000_000, "train_return_last100", 968.0),
    ("dopamine", "DQN", "pong", 10_000_000, "train_return_iteration", -4.9),
    ("dopamine", "DQN", "pong", 10_000_000, "train_return_mean_iterations", -13.5),
    ("dopamine", "IQN", "beam_rider", 10_000_000, "train_return_mean_iterations", 4158.0),
    ("dopamine", "DQN", "ms_pacman", 40_000_000, "train_return_iteration", 2446.5),
    ("sb3_zoo_benchmark", "QR-DQN", "seaquest", 40_000_000, "eval_return", 2557.576),
    ("schulman2017_table6", "PPO", "asterix", 40_000_000, "reported_score", 4532.5),
])
def test_reference_values_as_the_spec_gives_them(source, agent, game, frames, measure, value):
    ref = reference()
    hit = ref[(ref.source == source) & (ref.agent == agent) & (ref.game == game) & (ref.frames == frames)
              & (ref.measure == measure)]
    assert hit["value"].tolist() == [value]


def test_reference_table_is_well_formed():
    ref = reference()
    assert ref.columns.tolist() == ["source", "agent", "game", "frames", "measure", "value", "spread", "runs",
                                    "sticky_actions", "action_set", "note"]
    assert set(ref.game) <= set(AMTLB_GAMES)
    assert set(ref.frames) == {10_000_000, 40_000_000, 200_000_000}
    assert not ref.duplicated(["source", "agent", "game", "frames", "measure"]).any()
    assert ref.value.notna().all()
    ppo_pong = ref[(ref.source == "sb3_zoo_benchmark") & (ref.agent == "PPO") & (ref.game == "pong")]
    assert ppo_pong[["value", "spread"]].values.tolist() == [[20.989, 0.105]]
    # the SB3-zoo monitors have no sticky actions, Dopamine has 0.25
    assert set(ref.loc[ref.source == "dopamine", "sticky_actions"]) == {0.25}
    assert set(ref.loc[ref.source == "sb3_zoo_monitor", "sticky_actions"]) == {0.0}
    # QR-DQN's MsPacman run is only 3.9M frames long: no 10M value
    assert ref[(ref.agent == "QR-DQN") & (ref.game == "ms_pacman") & (ref.frames == 10_000_000)].empty
