"""The 59 AMTLB games and the emulator layer: N slots stepped in lockstep on ale-py's native AtariVectorEnv, with a
per-game frame clock and the original TrainingRun's game choice (a game per episode, drawn in proportion to its
remaining frame quota, no task id).

Emulators. AtariVectorEnv runs one ROM and does the preprocessing in C++ (84x84 grayscale, max-pool over the last
two frames, 4-stack, no-op starts, fire reset). A single game uses one AtariVectorEnv with N emulators. Several games
need an emulator of the slot's current game: a pool of one-emulator AtariVectorEnvs keyed by game, created lazily,
reused (an ended episode's emulator goes idle, already reset, and the next slot that draws its game takes it), at
most MAX_IDLE_EMULATORS idle (the least recently used is closed beyond that; a spent game's are closed at once).
Creating one costs two ROM loads (construction, then the seeded reset: about 0.15 s CPU each here), hence the reuse.
Both paths seed emulators in slot order from the same stream, so a one-game schedule gives the same episodes on
either path (tested).

Autoreset: AtariVectorEnv's SameStep mode. When an emulator's episode ends, the step returns the reward, terminated
and truncated of the last action and the first observation of the next episode (already reset), which is the
contract's same-step `episode_starts`. Episodes cut here (quota, max_steps_without_reward, resume) are reset with a
seedless (partial) reset, which draws from the emulator's own generator, so runs stay deterministic.

Frame clock, measured on ale-py 0.12.1: info["frame_number"] is the emulator's cumulative frame count; it runs on
through autoresets and seedless resets (which add their no-op/fire-reset frames, 0..noop_max-1 plus 1 FIRE frame
with use_fire_reset: 1..28 seen over 64 breakout/pong resets at noop_max=30) and restarts from 0 only at a seeded
reset (that reloads the ROM). info["episode_frame_number"] counts the current episode's frames including its reset
frames. A step's delta is `frameskip`, fewer when the episode ends inside the skip; at a SameStep autoreset the delta
also holds the new episode's reset frames (= its episode_frame_number), which are split off and counted for the new
episode. Reset frames are counted when the slot starts that episode (a reset episode that is never played, when the
slot's next game is another one, is not counted), so every counted frame belongs to exactly one Episode and a run's
clock equals the sum of its episodes' frames. With full_action_space every game has FIRE, so use_fire_reset fires
once at every reset.

Rewards by frame (`reward_log`): the original accumulated every reward as it came (a cumulative score that moves at
every step, partial episodes included), so the cumulative score C(t) of a game is the sum of the raw rewards its
slots received up to frame t of its clock. GameEnvs logs, after every agent step in which a game's slots received a
nonzero total, (game, the game's clock after the step, the game's rewards summed so far), starting with (game, 0,
0.0) for every game: C(t) is the value of the last entry of the game at or before t (protocol.cumulative).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from reprobench.core.errors import ConfigError

# specs/amtlb.md 1.4, in that order: ale-py's legacy 62-game list minus adventure, defender and hero
GAMES: tuple[str, ...] = (
    "air_raid", "alien", "amidar", "assault", "asterix", "asteroids", "atlantis", "bank_heist", "battle_zone",
    "beam_rider", "berzerk", "bowling", "boxing", "breakout", "carnival", "centipede", "chopper_command",
    "crazy_climber", "demon_attack", "double_dunk", "elevator_action", "enduro", "fishing_derby", "freeway",
    "frostbite", "gopher", "gravitar", "ice_hockey", "jamesbond", "journey_escape", "kangaroo", "krull",
    "kung_fu_master", "montezuma_revenge", "ms_pacman", "name_this_game", "phoenix", "pitfall", "pong", "pooyan",
    "private_eye", "qbert", "riverraid", "road_runner", "robotank", "seaquest", "skiing", "solaris",
    "space_invaders", "star_gunner", "tennis", "time_pilot", "tutankham", "up_n_down", "venture", "video_pinball",
    "wizard_of_wor", "yars_revenge", "zaxxon",
)
N_ACTIONS = 18  # full action space: every game shares Discrete(18), no task id needed
OBS_SHAPE = (4, 84, 84)  # uint8
MAX_IDLE_EMULATORS = 64  # multi-game pool: about 1.1 MiB RSS and one worker thread each (measured)
_SEED_MAX = 2**31 - 1  # ALE takes a non-negative int seed


def check_games(games, key: str = "amtlb.games") -> None:
    """ConfigError(key, ...) naming the first entry of `games` that is not one of the 59 AMTLB games."""
    if isinstance(games, str):
        raise ConfigError(key, f"expected a list of games, got the string '{games}'")
    known = set(GAMES)
    for game in games:
        if game not in known:
            hint = " (snake_case ROM ids, e.g. 'ms_pacman')" if isinstance(game, str) else ""
            raise ConfigError(key, f"unknown game {game!r}{hint}; the AMTLB games are: {', '.join(GAMES)}")


def _check_int(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


@dataclass(frozen=True)
class AtariSettings:
    """The emulator settings (specs/amtlb.md 5.1); every field is a config knob. Defaults: ALE v5 with sticky actions
    and the usual DQN preprocessing, raw (unclipped) rewards, full action space."""

    repeat_action_probability: float = 0.25
    frameskip: int = 4
    noop_max: int = 30
    use_fire_reset: bool = True
    episodic_life: bool = False
    max_num_frames_per_episode: int = 108_000
    max_steps_without_reward: int | None = None  # the original's max_rounds_w_no_reward (10000 in training runs):
    # end an episode after this many agent steps without a positive reward

    def __post_init__(self):
        p = self.repeat_action_probability
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"repeat_action_probability must be in [0, 1], got {p!r}")
        _check_int("frameskip", self.frameskip, 1)
        _check_int("noop_max", self.noop_max, 0)
        _check_int("max_num_frames_per_episode", self.max_num_frames_per_episode, 1)
        if self.max_steps_without_reward is not None:
            _check_int("max_steps_without_reward", self.max_steps_without_reward, 1)
        for name in ("use_fire_reset", "episodic_life"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")

    def reset_frames_max(self) -> int:
        """An upper bound on the frames one reset takes (no-ops up to noop_max - 1, or the one FIRE frame)."""
        return max(self.noop_max, 1)


class QuotaSchedule:
    """The original TrainingRun's game choice: before each episode, a game drawn with probability proportional to its
    remaining frame quota; spent games are never drawn."""

    def __init__(self, quotas: dict[str, int], seed: int, key: str = "amtlb.games"):
        if not quotas:
            raise ValueError("quotas must name at least one game")
        check_games(list(quotas), key)
        for game, quota in quotas.items():
            _check_int(f"the frame quota of '{game}'", quota, 1)
        self.games = tuple(quotas)  # draw order: the caller's order
        self.quotas = {g: int(q) for g, q in quotas.items()}
        self._remaining = np.array([self.quotas[g] for g in self.games], dtype=np.int64)
        self._index = {g: i for i, g in enumerate(self.games)}
        self.rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), 0])))

    @property
    def remaining(self) -> dict[str, int]:
        return {g: int(r) for g, r in zip(self.games, self._remaining)}

    @property
    def done(self) -> bool:
        return not self._remaining.any()

    def next_game(self) -> str | None:
        total = int(self._remaining.sum())
        if total == 0:
            return None
        u = int(self.rng.integers(0, total))  # exact integer draw: game i when cumsum[i-1] <= u < cumsum[i]
        return self.games[int(np.searchsorted(np.cumsum(self._remaining), u, side="right"))]

    def consume(self, game: str, frames: int) -> None:
        if game not in self._index:
            raise KeyError(f"'{game}' is not in this schedule ({', '.join(self.games)})")
        _check_int("frames", frames, 0)
        i = self._index[game]
        self._remaining[i] = max(0, int(self._remaining[i]) - int(frames))

    def state_dict(self) -> dict:
        return {"quotas": dict(self.quotas), "remaining": self.remaining, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        if dict(state["quotas"]) != self.quotas:
            raise ValueError(f"the state belongs to a schedule with quotas {dict(state['quotas'])}, not {self.quotas}")
        self._remaining[:] = [int(state["remaining"][g]) for g in self.games]
        self.rng.bit_generator.state = state["rng"]


@dataclass(frozen=True)
class Episode:
    """One finished (or truncated) episode."""

    slot: int
    game: str
    index: int  # episode number within this game in this run (0, 1, ...)
    episode_return: float  # raw, unclipped score
    frames: int  # emulator frames of this episode (no-op and fire-reset frames included)
    end_frame: int  # the game's frame clock at the episode's end (frames of this game consumed so far, all slots)
    truncated: bool  # cut by the quota, the frame cap, max_steps_without_reward, or a resume
    cut: bool = False  # ended by the benchmark (the quota, max_steps_without_reward, a resume), not by the emulator


class _Bank:
    """One AtariVectorEnv (one ROM, k emulators) and its frame bookkeeping. `pending[i]` holds the reset frames of a
    freshly reset emulator i not yet counted (-1 once its episode is under way); `stale[i]` marks an emulator cut
    mid-episode, reset before its next use."""

    def __init__(self, game: str, seeds: list[int], settings: AtariSettings, threads: int):
        from ale_py import AtariVectorEnv

        k = len(seeds)
        self.game, self.k = game, k
        self.env = AtariVectorEnv(
            game, k, batch_size=k, num_threads=threads, thread_affinity_offset=-1,
            max_num_frames_per_episode=settings.max_num_frames_per_episode,
            repeat_action_probability=float(settings.repeat_action_probability), full_action_space=True,
            continuous=False, autoreset_mode="SameStep", img_height=OBS_SHAPE[1], img_width=OBS_SHAPE[2],
            grayscale=True, stack_num=OBS_SHAPE[0], frameskip=settings.frameskip, maxpool=True,
            noop_max=settings.noop_max, episodic_life=settings.episodic_life, life_loss_info=False,
            reward_clipping=False, use_fire_reset=settings.use_fire_reset,
        )
        self.last_fn = np.zeros(k, dtype=np.int64)
        self.pending = np.full(k, -1, dtype=np.int64)
        self.stale = np.zeros(k, dtype=bool)
        self.obs = np.zeros((k, *OBS_SHAPE), dtype=np.uint8)
        self.seed(seeds)

    def _take_reset(self, obs, info, mask) -> None:
        self.obs[mask] = obs[mask]
        self.last_fn[mask] = info["frame_number"][mask]
        self.pending[mask] = info["episode_frame_number"][mask]  # the reset's no-op and fire frames
        self.stale[mask] = False

    def seed(self, seeds: list[int]) -> None:
        """Reload every emulator with its seed (frame_number restarts from 0)."""
        obs, info = self.env.reset(seed=np.asarray(seeds, dtype=np.int64))
        self._take_reset(obs, info, np.ones(self.k, dtype=bool))

    def reset(self, mask: np.ndarray) -> None:
        """New episodes on the emulators in `mask`, from their own generators (no reseed: frame_number runs on)."""
        if self.k == 1:
            obs, info = self.env.reset()
        else:
            obs, info = self.env.reset(options={"reset_mask": mask})
        self._take_reset(obs, info, mask)

    def send(self, actions: np.ndarray) -> None:
        self.env.send(actions)

    def recv(self):
        """(rewards, terminated, truncated, frames of the step's action) per emulator; an ended emulator is already
        reset (SameStep) and its new episode's reset frames go to `pending`."""
        obs, rewards, terminated, truncated, info = self.env.recv()
        order = np.asarray(info["env_id"])
        if not np.array_equal(order, np.arange(self.k)):  # batch_size == num_envs returns every emulator; order them
            inv = np.argsort(order)
            obs, rewards, terminated, truncated = obs[inv], rewards[inv], terminated[inv], truncated[inv]
            info = {k: np.asarray(v)[inv] for k, v in info.items()}
        fn = info["frame_number"].astype(np.int64)
        delta, self.last_fn = fn - self.last_fn, fn
        ended = terminated | truncated
        reset_frames = np.where(ended, info["episode_frame_number"], 0)
        self.pending[ended] = reset_frames[ended]
        self.obs = obs
        return rewards.astype(np.float64), terminated, truncated, delta - reset_frames

    def close(self) -> None:
        """Free the emulators and join the worker threads now (AtariVectorEnv.close() alone frees nothing: its C++
        vectorizer lives until the Python object is collected)."""
        if self.env is not None:
            self.env.close()
            del self.env.ale
            self.env = None


class GameEnvs:
    """`num_envs` slots stepped in lockstep, each playing episodes of the games its schedule draws. `threads` is the
    worker-thread count of the single-game AtariVectorEnv; with several games each slot's emulator has its own worker
    thread and all N step at once."""

    def __init__(self, schedule: QuotaSchedule, num_envs: int, seed: int,
                 settings: AtariSettings = AtariSettings(), threads: int = 1, *, _pooled: bool | None = None):
        if not isinstance(schedule, QuotaSchedule):
            raise ValueError(f"schedule must be a QuotaSchedule, got {type(schedule).__name__}")
        _check_int("num_envs", num_envs, 1)
        _check_int("threads", threads, 1)
        _check_int("seed", seed, 0)
        if not isinstance(settings, AtariSettings):
            raise ValueError(f"settings must be an AtariSettings, got {type(settings).__name__}")
        self.schedule, self.num_envs, self.settings, self.threads = schedule, int(num_envs), settings, int(threads)
        # several games need an emulator per slot of its current game; _pooled=True forces that path (tests)
        self.pooled = len(schedule.games) > 1 if _pooled is None else bool(_pooled)
        if not self.pooled and len(schedule.games) > 1:
            raise ValueError(f"one AtariVectorEnv runs one game; the schedule has {len(schedule.games)}")
        self.rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), 1])))  # emulator seeds
        self.frames: dict[str, int] = dict.fromkeys(schedule.games, 0)
        self.reward_log: list[tuple[str, int, float]] = [(g, 0, 0.0) for g in schedule.games]  # module docstring
        self._reward_sum: dict[str, float] = dict.fromkeys(schedule.games, 0.0)
        self.done = schedule.done
        self._next_index: dict[str, int] = dict.fromkeys(schedule.games, 0)
        n = self.num_envs
        self._game: list[str | None] = [None] * n  # the slot's episode in progress (None: none)
        self._index = np.zeros(n, dtype=np.int64)
        self._return = np.zeros(n, dtype=np.float64)
        self._ep_frames = np.zeros(n, dtype=np.int64)
        self._no_reward = np.zeros(n, dtype=np.int64)  # agent steps since the last positive reward
        self._carried: list[Episode] = []  # episodes open at a loaded checkpoint, closed by the next reset()
        self._bank: _Bank | None = None  # single-game path
        self._slot_bank: list[_Bank | None] = [None] * n  # pooled path: the slot's one-emulator bank
        self._idle: list[_Bank] = []  # pooled path: idle banks, least recently used first
        self._obs = np.zeros((n, *OBS_SHAPE), dtype=np.uint8)
        self._started = False

    # --- emulators ---------------------------------------------------------------------------------------------
    def _new_seed(self) -> int:
        return int(self.rng.integers(0, _SEED_MAX))

    def _emulator(self, slot: int) -> tuple[_Bank, int]:
        return (self._bank, slot) if not self.pooled else (self._slot_bank[slot], 0)

    def _release(self, bank: _Bank) -> None:
        if self.schedule.remaining[bank.game] == 0:
            bank.close()  # a spent game is never drawn again
            return
        self._idle.append(bank)
        if len(self._idle) > MAX_IDLE_EMULATORS:
            self._idle.pop(0).close()

    def _acquire(self, game: str) -> _Bank:
        for j in range(len(self._idle) - 1, -1, -1):  # most recently released first
            if self._idle[j].game == game:
                return self._idle.pop(j)
        return _Bank(game, [self._new_seed()], self.settings, 1)

    def _close_spent_idle(self) -> None:
        remaining, keep = self.schedule.remaining, []
        for bank in self._idle:
            (keep.append(bank) if remaining[bank.game] > 0 else bank.close())
        self._idle = keep

    # --- episodes ----------------------------------------------------------------------------------------------
    def _close(self, slot: int, truncated: bool, cut: bool) -> Episode:
        game = self._game[slot]
        episode = Episode(slot=slot, game=game, index=int(self._index[slot]),
                          episode_return=float(self._return[slot]), frames=int(self._ep_frames[slot]),
                          end_frame=self.frames[game], truncated=bool(truncated), cut=bool(cut))
        self._game[slot] = None
        return episode

    def _start(self, slots: list[int]) -> None:
        """New episodes on `slots` (their previous ones closed): a game each from the schedule, in slot order, then
        an emulator each. The draws come before any reset frame is counted, so a None draw means every game was spent
        before this step's draws, and then every slot's game was spent and every slot ended here: all slots end
        together and none is left idle."""
        draws = [self.schedule.next_game() for _ in slots]
        if any(g is None for g in draws):
            assert all(g is None for g in draws) and len(slots) == self.num_envs, "a slot left idle"
            for slot in range(self.num_envs):
                if self.pooled and self._slot_bank[slot] is not None:
                    self._slot_bank[slot].close()
                    self._slot_bank[slot] = None
            if self._bank is not None:
                self._bank.close()
                self._bank = None
            self._close_spent_idle()
            self.done = True
            return
        if not self.pooled:
            if self._bank is None:
                self._bank = _Bank(draws[0], [self._new_seed() for _ in range(self.num_envs)], self.settings,
                                   self.threads)
            mask = np.zeros(self.num_envs, dtype=bool)
            mask[slots] = self._bank.pending[slots] < 0  # cut mid-episode: needs a reset
            if mask.any():
                self._bank.reset(mask)
        else:
            for slot, game in zip(slots, draws):
                bank = self._slot_bank[slot]
                if bank is not None and bank.game != game:
                    self._release(bank)
                    bank = None
                if bank is None:
                    bank = self._acquire(game)
                if bank.pending[0] < 0 or bank.stale[0]:
                    bank.reset(np.ones(1, dtype=bool))
                self._slot_bank[slot] = bank
            self._close_spent_idle()
        for slot, game in zip(slots, draws):
            bank, i = self._emulator(slot)
            reset_frames = int(bank.pending[i])
            bank.pending[i] = -1
            self.schedule.consume(game, reset_frames)
            self.frames[game] += reset_frames
            self._game[slot] = game
            self._index[slot] = self._next_index[game]
            self._next_index[game] += 1
            self._return[slot], self._ep_frames[slot], self._no_reward[slot] = 0.0, reset_frames, 0
            self._obs[slot] = bank.obs[i]

    # --- the contract ------------------------------------------------------------------------------------------
    def reset(self) -> tuple[np.ndarray, list[Episode]]:
        """Start new episodes in every slot. The list holds the episodes that were open (at a loaded checkpoint, or
        before this call), closed as truncated with what they had then; it is empty on a fresh start."""
        closed = list(self._carried)
        self._carried = []
        for slot in range(self.num_envs):
            if self._game[slot] is not None:
                closed.append(self._close(slot, truncated=True, cut=True))
        if self.pooled:
            for slot in range(self.num_envs):
                if self._slot_bank[slot] is not None:
                    self._slot_bank[slot].stale[0] = True
                    self._slot_bank[slot].pending[0] = -1
        elif self._bank is not None and self._started:
            self._bank.seed([self._new_seed() for _ in range(self.num_envs)])  # fresh episodes, frames counted below
        self._started = True
        self.done = self.schedule.done
        if not self.done:
            self._start(list(range(self.num_envs)))
        return self._obs.copy(), closed

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Episode]]:
        """One agent step in every slot. Returns observations (N, 4, 84, 84) uint8, raw rewards (N,) float64 of the
        actions just taken, episode_starts (N,) bool (the slot's episode ended at this step and its observation is
        the first of the next one; at the run's last step every slot is True and the observations are the last
        ones), and the episodes that ended at this step, in slot order."""
        if self.done:
            raise RuntimeError("the schedule is spent: the run is over (GameEnvs.done)")
        if not self._started:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or actions.dtype.kind not in "iu":
            raise ValueError(f"actions must be an integer array of shape ({self.num_envs},), got {actions.dtype} "
                             f"{actions.shape}")
        if actions.min() < 0 or actions.max() >= N_ACTIONS:
            raise ValueError(f"actions must be in [0, {N_ACTIONS}), got {actions.tolist()}")
        actions = actions.astype(np.int64)
        n = self.num_envs
        if not self.pooled:
            self._bank.send(actions)
            rewards, terminated, truncated, step_frames = self._bank.recv()
            self._obs = self._bank.obs.copy()
        else:
            for slot in range(n):  # all in flight at once: one worker thread per emulator
                self._slot_bank[slot].send(actions[slot:slot + 1])
            parts = [self._slot_bank[slot].recv() for slot in range(n)]
            rewards, terminated, truncated, step_frames = (np.concatenate(p) for p in zip(*parts))
            self._obs = np.stack([self._slot_bank[slot].obs[0] for slot in range(n)])
        per_game: dict[str, int] = {}
        for slot in range(n):
            per_game[self._game[slot]] = per_game.get(self._game[slot], 0) + int(step_frames[slot])
        for game, f in per_game.items():
            self.frames[game] += f
            self.schedule.consume(game, f)
        received: dict[str, float] = {}  # each game's rewards of this step, summed in slot order
        for slot in np.flatnonzero(rewards):
            game = self._game[slot]
            received[game] = received.get(game, 0.0) + float(rewards[slot])
        for game, total in received.items():
            if total != 0.0:
                self._reward_sum[game] += total
                self.reward_log.append((game, self.frames[game], self._reward_sum[game]))
        self._return += rewards
        self._ep_frames += step_frames
        self._no_reward = np.where(rewards > 0, 0, self._no_reward + 1)
        ended_by_game = terminated | truncated
        cap = self.settings.max_steps_without_reward
        no_reward = self._no_reward >= cap if cap is not None else np.zeros(n, dtype=bool)
        remaining = self.schedule.remaining
        spent = np.array([remaining[g] == 0 for g in self._game])
        # the frame cap counted with the reset frames (ALE's own starts after them: a cap of 400 gave 401-427 frames);
        # like ALE's, an episode it ends is truncated but not cut (a monitor counts it as an episode)
        capped = self._ep_frames >= self.settings.max_num_frames_per_episode
        ending = ended_by_game | no_reward | spent | capped
        finished = []
        for slot in np.flatnonzero(ending):
            cut = not (ended_by_game[slot] or capped[slot])
            finished.append(self._close(int(slot), truncated=not terminated[slot], cut=cut))
            if not ended_by_game[slot]:
                bank, i = self._emulator(int(slot))
                bank.pending[i] = -1  # cut mid-episode
                bank.stale[i] = True
        if finished:
            self._start([int(s) for s in np.flatnonzero(ending)])
        return self._obs.copy(), rewards, ending, finished

    def state_dict(self) -> dict:
        """Bookkeeping only (emulator state cannot be saved): the clock, episode counters, the open episodes' return
        and frames, the emulator-seed generator and the schedule. Plain ints, floats, strings and dicts."""
        open_episodes = [
            None if self._game[s] is None else
            {"game": self._game[s], "index": int(self._index[s]), "episode_return": float(self._return[s]),
             "frames": int(self._ep_frames[s])}
            for s in range(self.num_envs)
        ]
        carried = [dataclasses.asdict(e) for e in self._carried]
        return {"num_envs": self.num_envs, "settings": dataclasses.asdict(self.settings), "frames": dict(self.frames),
                "next_index": dict(self._next_index), "open": open_episodes, "carried": carried,
                "reward_log": [list(entry) for entry in self.reward_log], "reward_sum": dict(self._reward_sum),
                "rng": self.rng.bit_generator.state, "schedule": self.schedule.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Restore the bookkeeping; the next reset() closes the episodes that were open as truncated (their return and
        frames as of the checkpoint) and starts new ones."""
        if int(state["num_envs"]) != self.num_envs:
            raise ValueError(f"the state belongs to GameEnvs with num_envs={state['num_envs']}, not {self.num_envs}")
        if dict(state["settings"]) != dataclasses.asdict(self.settings):
            raise ValueError(f"the state belongs to GameEnvs with settings {dict(state['settings'])}, not "
                             f"{dataclasses.asdict(self.settings)}")
        if set(state["frames"]) != set(self.schedule.games):
            raise ValueError(f"the state belongs to a run on {sorted(state['frames'])}, not {sorted(self.frames)}")
        self.schedule.load_state_dict(state["schedule"])
        self.rng.bit_generator.state = state["rng"]
        self.frames = {g: int(state["frames"][g]) for g in self.schedule.games}
        self._next_index = {g: int(state["next_index"][g]) for g in self.schedule.games}
        if "reward_log" not in state:
            raise ValueError("the state was saved before GameEnvs logged rewards by frame (C(t) needs them): start the "
                             "run again")
        self.reward_log = [(str(g), int(t), float(v)) for g, t, v in state["reward_log"]]
        self._reward_sum = {g: float(state["reward_sum"][g]) for g in self.schedule.games}
        self._carried = [Episode(**e) for e in state["carried"]]
        for slot, e in enumerate(state["open"]):
            self._game[slot] = None
            if e is not None:
                self._carried.append(Episode(slot=slot, game=e["game"], index=int(e["index"]),
                                             episode_return=float(e["episode_return"]), frames=int(e["frames"]),
                                             end_frame=self.frames[e["game"]], truncated=True, cut=True))
        self.done = self.schedule.done

    def close(self) -> None:
        banks = [self._bank, *self._slot_bank, *self._idle]
        self._bank, self._slot_bank, self._idle = None, [None] * self.num_envs, []
        for bank in banks:
            if bank is not None:
                bank.close()
