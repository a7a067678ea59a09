"""reprobench.amtlb.atari on the real ROMs (ale-py bundles them): the game list, the quota schedule, the frame clock,
determinism, raw rewards, the full action space, quota exhaustion, several games, resume, and the no-reward cut.

Expected values come from the spec (the game list, section 1.4), from ALE's documented behaviour (frameskip frames
per step, reset frames 0..noop_max-1 plus one FIRE frame) or from binomial arithmetic, not from the code's output."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reprobench.amtlb import atari
from reprobench.amtlb.atari import GAMES, N_ACTIONS, OBS_SHAPE, AtariSettings, GameEnvs, QuotaSchedule, check_games
from reprobench.core import checkpoint
from reprobench.core.errors import ConfigError

# specs/amtlb.md 1.4, verbatim
SPEC_GAMES = (
    "air_raid alien amidar assault asterix asteroids atlantis bank_heist battle_zone beam_rider berzerk bowling boxing "
    "breakout carnival centipede chopper_command crazy_climber demon_attack double_dunk elevator_action enduro "
    "fishing_derby freeway frostbite gopher gravitar ice_hockey jamesbond journey_escape kangaroo krull kung_fu_master "
    "montezuma_revenge ms_pacman name_this_game phoenix pitfall pong pooyan private_eye qbert riverraid road_runner "
    "robotank seaquest skiing solaris space_invaders star_gunner tennis time_pilot tutankham up_n_down venture "
    "video_pinball wizard_of_wor yars_revenge zaxxon"
).split()

FRAMESKIP = 4
NOOP_MAX = 30
RESET_MAX = NOOP_MAX  # a reset takes 0..noop_max-1 no-op frames, or the one FIRE frame: at most noop_max


def run_to_end(envs: GameEnvs, rng: np.random.Generator, max_steps: int = 5000):
    """Random actions until the schedule is spent: (episodes, per-step (observations, rewards, starts))."""
    _, episodes = envs.reset()
    trace = []
    for _ in range(max_steps):
        obs, rewards, starts, finished = envs.step(rng.integers(0, N_ACTIONS, envs.num_envs))
        trace.append((obs, rewards, starts))
        episodes += finished
        if envs.done:
            return episodes, trace
    raise AssertionError("the schedule was not spent")


def test_games_are_the_spec_list_and_every_rom_loads():
    from ale_py import roms

    assert len(GAMES) == 59 and GAMES == tuple(SPEC_GAMES)
    assert [g for g in GAMES if roms.get_rom_path(g) is None] == []  # get_rom_path checks each file's md5


def test_check_games_names_the_key_and_the_game():
    check_games(["pong", "breakout"])
    with pytest.raises(ConfigError, match=r"amtlb\.games.*'MsPacman'"):
        check_games(["pong", "MsPacman"])
    with pytest.raises(ConfigError, match=r"amtlb\.test_games.*'hero'"):  # in ale-py, not in AMTLB
        check_games(["hero"], key="amtlb.test_games")
    with pytest.raises(ConfigError, match=r"amtlb\.games.*'defender'"):
        QuotaSchedule({"pong": 10, "defender": 10}, seed=0)


def test_bad_arguments_name_the_value():
    with pytest.raises(ValueError, match="num_envs.*0"):
        GameEnvs(QuotaSchedule({"pong": 100}, 0), num_envs=0, seed=0)
    with pytest.raises(ValueError, match="threads.*0"):
        GameEnvs(QuotaSchedule({"pong": 100}, 0), num_envs=1, seed=0, threads=0)
    with pytest.raises(ValueError, match="frameskip.*0"):
        AtariSettings(frameskip=0)
    with pytest.raises(ValueError, match="repeat_action_probability.*1.5"):
        AtariSettings(repeat_action_probability=1.5)
    with pytest.raises(ValueError, match="max_steps_without_reward.*0"):
        AtariSettings(max_steps_without_reward=0)
    with pytest.raises(ValueError, match="quota of 'pong'.*-5"):
        QuotaSchedule({"pong": -5}, 0)


def draw_share(schedule: QuotaSchedule, game: str, n: int) -> float:
    return sum(schedule.next_game() == game for _ in range(n)) / n


def test_quota_schedule_draws_in_proportion_to_remaining_quota():
    n = 4000
    s = QuotaSchedule({"pong": 3000, "breakout": 1000}, seed=11)
    p = 0.75  # 3000 / 4000
    assert abs(draw_share(s, "pong", n) - p) < 4 * math.sqrt(p * (1 - p) / n)  # 4 binomial sd: 0.027
    s.consume("pong", 2000)  # remaining 1000 and 1000
    assert s.remaining == {"pong": 1000, "breakout": 1000}
    assert abs(draw_share(s, "pong", n) - 0.5) < 4 * math.sqrt(0.25 / n)  # 0.032
    s.consume("pong", 5000)  # overspent: clipped at 0, never drawn again
    assert s.remaining["pong"] == 0 and not s.done
    assert {s.next_game() for _ in range(500)} == {"breakout"}
    s.consume("breakout", 1000)
    assert s.done and s.next_game() is None


def test_quota_schedule_state_round_trip_gives_the_same_draws(tmp_path):
    quotas = {"pong": 500, "breakout": 700, "alien": 300}
    s = QuotaSchedule(quotas, seed=3)
    for _ in range(7):
        s.consume(s.next_game(), 60)
    path = tmp_path / "s.pt"
    checkpoint.save(path, {"k": 1}, schedule=s.state_dict())
    ahead = []
    for _ in range(20):
        g = s.next_game()
        ahead.append(g)
        s.consume(g, 15)
    restored = QuotaSchedule(quotas, seed=99)  # another seed: the state must carry the generator
    restored.load_state_dict(checkpoint.load(path, {"k": 1})["schedule"])
    again = []
    for _ in range(20):
        g = restored.next_game()
        again.append(g)
        restored.consume(g, 15)
    assert again == ahead and restored.remaining == s.remaining
    with pytest.raises(ValueError, match="quotas"):
        QuotaSchedule({"pong": 1}, 0).load_state_dict(s.state_dict())


def test_ale_frame_number_runs_on_through_autoresets():
    """The facts atari.py's clock rests on: frameskip frames per step; at a SameStep autoreset the delta adds the
    new episode's reset frames (its episode_frame_number); a seeded reset restarts the count."""
    from ale_py import AtariVectorEnv

    env = AtariVectorEnv("breakout", 2, batch_size=2, num_threads=1, max_num_frames_per_episode=100,
                         repeat_action_probability=0.25, full_action_space=True, reward_clipping=False,
                         autoreset_mode="SameStep", frameskip=FRAMESKIP, noop_max=NOOP_MAX, use_fire_reset=True)
    try:
        _, info = env.reset(seed=5)
        assert (info["frame_number"] == info["episode_frame_number"]).all()  # seeded reset: count from 0
        assert (info["frame_number"] <= RESET_MAX).all()
        prev, autoresets = info["frame_number"].copy(), 0
        for _ in range(60):
            _, _, term, trunc, info = env.step(np.zeros(2, dtype=np.int64))
            delta = info["frame_number"] - prev
            prev = info["frame_number"].copy()
            ended = term | trunc
            assert (delta[~ended] == FRAMESKIP).all()
            assert (delta[ended] == FRAMESKIP + info["episode_frame_number"][ended]).all()  # 100 % 4 == 0
            autoresets += int(ended.sum())
        assert autoresets >= 2  # 100-frame cap: every ~25 steps
        _, info = env.reset(seed=5)
        assert (info["frame_number"] <= RESET_MAX).all()
    finally:
        env.close()


def test_frame_clock_steps_and_episodes():
    """Frameskip 4 with sticky actions: a step without an episode end moves the clock by exactly 4 per slot; the
    100-frame cap, counted with the reset frames, ends episodes within a step of 100 frames (ALE's own cap starts
    after the reset frames: 101-128), truncated but not cut; episodes' frames sum to the clock."""
    settings = AtariSettings(max_num_frames_per_episode=100)
    envs = GameEnvs(QuotaSchedule({"breakout": 1200}, 4), num_envs=2, seed=4, settings=settings)
    try:
        _, episodes = envs.reset()
        assert envs.frames["breakout"] <= 2 * RESET_MAX
        rng = np.random.default_rng(1)
        while not envs.done:
            before = envs.frames["breakout"]
            _, _, starts, finished = envs.step(rng.integers(0, N_ACTIONS, 2))
            episodes += finished
            if not starts.any():
                assert envs.frames["breakout"] - before == 2 * FRAMESKIP
            else:
                assert envs.frames["breakout"] - before <= 2 * (FRAMESKIP + RESET_MAX)
        capped = [e for e in episodes if e.end_frame < 1200]  # every episode before the quota's last step
        assert len(capped) >= 6  # ~1200 frames / (2 slots) / ~115 frames per episode, per slot ~5
        for e in capped:
            assert e.truncated and not e.cut and 100 <= e.frames < 100 + FRAMESKIP
        assert sum(e.frames for e in episodes) == envs.frames["breakout"]
        assert sorted(e.index for e in episodes) == list(range(len(episodes)))
    finally:
        envs.close()


def test_same_seed_same_episodes_other_seed_differs():
    def trace(seed, pooled=None, threads=1):
        settings = AtariSettings(max_steps_without_reward=30)  # cuts mid-episode too
        envs = GameEnvs(QuotaSchedule({"breakout": 1000}, 8), 2, seed, settings, threads, _pooled=pooled)
        try:
            return run_to_end(envs, np.random.default_rng(2))
        finally:
            envs.close()

    (eps_a, tr_a), (eps_b, tr_b), (eps_c, tr_c) = trace(21), trace(21), trace(22)
    assert eps_a == eps_b and len(tr_a) == len(tr_b)
    for (oa, ra, sa), (ob, rb, sb) in zip(tr_a, tr_b):
        assert np.array_equal(oa, ob) and np.array_equal(ra, rb) and np.array_equal(sa, sb)
    assert eps_a != eps_c or any(not np.array_equal(a[0], c[0]) for a, c in zip(tr_a, tr_c))
    # the multi-game path (a one-emulator AtariVectorEnv per slot) processes and seeds like the single-game one
    eps_p, tr_p = trace(21, pooled=True)
    assert eps_p == eps_a and all(np.array_equal(a[0], p[0]) for a, p in zip(tr_a, tr_p))
    # two worker threads (amtlb.emulator_threads) step the same emulators to the same frames and rewards
    eps_t, tr_t = trace(21, threads=2)
    assert eps_t == eps_a and all(np.array_equal(a[0], t[0]) and np.array_equal(a[1], t[1])
                                  for a, t in zip(tr_a, tr_t))


def test_emulator_threads_follow_the_setting():
    import os

    from reprobench.amtlb.runs import emulator_threads

    assert emulator_threads("threads", 3) == 3 and emulator_threads("5", 1) == 5
    assert emulator_threads("auto", 1) == len(os.sched_getaffinity(0))
    for bad in ("0", "-2", "many"):
        with pytest.raises(ConfigError, match=rf"amtlb\.emulator_threads.*'{bad}'"):
            emulator_threads(bad, 1)


def test_a_game_over_keeps_its_last_reward():
    """SameStep autoreset returns the last action's reward with the next episode's first observation: a pong game
    that a NOOP agent loses ends at -21 (the opponent's 21st point is the terminal step's reward), not truncated."""
    envs = GameEnvs(QuotaSchedule({"pong": 100_000}, 2), 1, 2)
    try:
        envs.reset()
        for _ in range(2000):
            _, rewards, starts, finished = envs.step(np.zeros(1, dtype=np.int64))
            if finished:
                break
        assert starts[0] and rewards[0] == -1.0
        assert finished[0].episode_return == -21.0 and not finished[0].truncated
    finally:
        envs.close()


def test_rewards_are_raw_and_every_full_action_is_accepted():
    envs = GameEnvs(QuotaSchedule({"space_invaders": 10_000}, 0), 2, 0)
    try:
        envs.reset()
        rng, rewards = np.random.default_rng(0), []
        for _ in range(300):
            rewards.append(envs.step(rng.integers(0, N_ACTIONS, 2))[1])
        rewards = np.concatenate(rewards)
        assert rewards.dtype == np.float64 and rewards.max() >= 5  # invaders score 5..30: no clipping to 1
    finally:
        envs.close()
    envs = GameEnvs(QuotaSchedule({"breakout": 10_000}, 0), 2, 0)  # breakout's minimal set has 4 actions
    try:
        obs, _ = envs.reset()
        assert obs.shape == (2, *OBS_SHAPE) and obs.dtype == np.uint8
        for a in range(N_ACTIONS):
            obs, *_ = envs.step(np.array([a, N_ACTIONS - 1 - a]))
        with pytest.raises(ValueError, match="18"):
            envs.step(np.array([0, 18]))
        with pytest.raises(ValueError, match="shape"):
            envs.step(np.array([0, 1, 2]))
    finally:
        envs.close()


def test_quota_exhaustion_closes_every_episode():
    n, quota = 3, 2000
    envs = GameEnvs(QuotaSchedule({"pong": quota}, 5), n, 5)
    try:
        episodes, trace = run_to_end(envs, np.random.default_rng(5))
        # the game is found spent after the step that spends it: that step and the previous step's reset frames
        assert quota <= envs.frames["pong"] <= quota + n * (FRAMESKIP + RESET_MAX)
        last = [e for e in episodes if e.end_frame == envs.frames["pong"]]
        assert sorted(e.slot for e in last) == list(range(n))  # every slot's episode closed at the end
        assert all(e.truncated for e in last)  # pong's first game takes far more than 2000 frames
        assert trace[-1][2].all()  # the last step ends every slot
        assert sum(e.frames for e in episodes) == envs.frames["pong"]
        with pytest.raises(RuntimeError, match="over"):
            envs.step(np.zeros(n, dtype=np.int64))
    finally:
        envs.close()


def test_several_games_interleave_across_slots(monkeypatch):
    monkeypatch.setattr(atari, "MAX_IDLE_EMULATORS", 2)  # the pool's bound, exercised: idle emulators get closed
    quotas = {"pong": 900, "breakout": 900, "freeway": 600}
    settings = AtariSettings(max_steps_without_reward=25)  # ~110-frame episodes: many game draws
    n = 3
    envs = GameEnvs(QuotaSchedule(quotas, 6), n, 6, settings)
    try:
        _, episodes = envs.reset()
        rng = np.random.default_rng(6)
        while not envs.done:
            for slot in range(n):  # each slot steps an emulator of its episode's game
                assert envs._slot_bank[slot].game == envs._game[slot]
            assert len(envs._idle) <= 2
            episodes += envs.step(rng.integers(0, N_ACTIONS, n))[3]
        for game, quota in quotas.items():
            mine = [e for e in episodes if e.game == game]
            assert sum(e.frames for e in mine) == envs.frames[game]
            assert quota <= envs.frames[game] <= quota + n * (FRAMESKIP + 2 * RESET_MAX)
            assert sorted(e.index for e in mine) == list(range(len(mine)))
            assert max(e.end_frame for e in mine) == envs.frames[game]
        for slot in range(n):  # games interleave within a slot
            played = [e.game for e in episodes if e.slot == slot]
            assert len(set(played)) >= 2
            assert any(a != b for a, b in zip(played, played[1:]))
        assert envs.schedule.done and envs._idle == []  # spent games' emulators are closed
    finally:
        envs.close()


def test_resume_closes_open_episodes_and_continues_the_counters(tmp_path):
    quotas = {"pong": 2400}
    envs = GameEnvs(QuotaSchedule(quotas, 9), 2, 9)
    rng = np.random.default_rng(9)
    try:
        _, episodes = envs.reset()
        returns = np.zeros(2)
        for _ in range(40):
            _, rewards, starts, finished = envs.step(rng.integers(0, N_ACTIONS, 2))
            assert not finished  # pong's first game lasts well over 40 steps
            returns += rewards
        frames_at = dict(envs.frames)
        path = tmp_path / "ck.pt"
        checkpoint.save(path, {"run": 1}, envs=envs.state_dict())
    finally:
        envs.close()
    resumed = GameEnvs(QuotaSchedule(quotas, 0), 2, 0)  # other seeds: the state carries the generators
    try:
        resumed.load_state_dict(checkpoint.load(path, {"run": 1})["envs"])
        assert resumed.frames == frames_at
        obs, closed = resumed.reset()
        assert [e.slot for e in closed] == [0, 1] and [e.index for e in closed] == [0, 1]
        assert all(e.truncated and e.game == "pong" and e.end_frame == frames_at["pong"] for e in closed)
        assert [e.episode_return for e in closed] == returns.tolist()
        assert sum(e.frames for e in closed) == frames_at["pong"]  # all frames so far were theirs
        assert frames_at["pong"] < resumed.frames["pong"] <= frames_at["pong"] + 2 * RESET_MAX  # new episodes' resets
        later = []
        while not resumed.done:
            later += resumed.step(rng.integers(0, N_ACTIONS, 2))[3]
        assert sorted(e.index for e in later) == list(range(2, 2 + len(later)))
        assert sum(e.frames for e in closed + later) == resumed.frames["pong"] >= quotas["pong"]
    finally:
        resumed.close()


def test_max_steps_without_reward_cuts_episodes():
    k = 5
    envs = GameEnvs(QuotaSchedule({"pong": 10_000}, 1), 2, 1, AtariSettings(max_steps_without_reward=k))
    try:
        envs.reset()
        episodes = []
        for step in range(1, 3 * k + 1):
            _, rewards, starts, finished = envs.step(np.zeros(2, dtype=np.int64))  # NOOP never scores in 5 steps
            assert starts.all() == (step % k == 0)
            episodes += finished
        assert len(episodes) == 6 and [e.index for e in episodes] == list(range(6))
        for e in episodes:
            assert e.truncated and e.episode_return == 0.0
            assert k * FRAMESKIP <= e.frames <= k * FRAMESKIP + RESET_MAX
    finally:
        envs.close()


def test_rewards_are_logged_by_frame_partial_episodes_included():
    """The reward log against the rewards and clock seen step by step here: after each step with rewards, the game's
    clock and its rewards summed so far; C(quota) read from the log is every reward of a step that ended at or
    before the quota's frame, the last, quota-cut episode's included."""
    from reprobench.amtlb import protocol

    n, quota = 3, 3000
    envs = GameEnvs(QuotaSchedule({"space_invaders": quota}, 3), n, 3)
    try:
        envs.reset()
        rng, steps, episodes = np.random.default_rng(3), [], []
        while not envs.done:
            _, rewards, _, finished = envs.step(rng.integers(0, N_ACTIONS, n))
            steps.append((envs.frames["space_invaders"], float(rewards.sum())))
            episodes += finished
    finally:
        envs.close()
    log = envs.reward_log
    assert log[0] == ("space_invaders", 0, 0.0)
    expected, total = [("space_invaders", 0, 0.0)], 0.0
    for frame, received in steps:
        if received:
            total += received
            expected.append(("space_invaders", frame, total))
    assert log == expected and total > 0
    assert total == sum(e.episode_return for e in episodes)  # every reward, the cut episodes' included
    assert any(e.cut and e.episode_return > 0 for e in episodes)  # the quota cut episodes that had scored
    frames, sums = [f for _, f, _ in log], [v for _, _, v in log]
    by_hand = sum(received for frame, received in steps if frame <= quota)
    assert protocol.cumulative(frames, sums, [quota]).tolist() == [by_hand]
