"""The meta-referential game with both players learned (the paper's multi-agent setting, Table 1's learned columns):
many episodes at once, each step taking the speaker's utterance and the listener's decision.

    env = MetaReferentialGameTwoPlayerVector(num_envs=4, seed=0, descriptive=True, nbr_distractors=0,
                                             provide_listener_feedback=True, ...)   # MetaReferentialGame's kwargs
    obs, info = env.reset(seed=0)                           # obs = {"speaker": {...}, "listener": {...}}
    obs, reward, terminated, truncated, info = env.step(speaker_messages (n, L), listener_decisions (n,))

Everything but the channel is the listener-side vector environment's (reprobench.s2b.vector_env): the same episodes,
stimuli, decisions, shared rewards, next-step autoresets and infos (speaker_latents included). The channel is live
(specs/s2b.md sections 2.2, 2.3, 2.5, 2.9):
- the speaker utters at every step; its message is regularised as the reference's channel is (every token after the
  first EoS becomes EoS, section 2.2);
- the listener's next observation shows it through the episode's vocabulary permutation (the speaker's bijection
  decoded, the listener's encoded: one per-episode bijection of 1..V, EoS fixed, section 2.9), so fed the posdis
  speaker's messages the listener side is MetaReferentialGameVector's step for step (tested);
- the speaker's next observation shows its own message, in its own token space (section 2.3);
- an episode's first observation shows all EoS to both (nothing was said yet); the message sent on the step that
  autoresets a sub-environment is ignored, as its decision is.
The speaker's observation: its K + 1 stimuli, target first, not shuffled (section 2.3), read from the game's
feedback row, which shows them to the listener; so listener feedback must be on (as in every multi-agent run of the
reference, section 2.11). role_id [1, 0]; mode_id, previous_game_* and other_agent_id are the listener's (the game's
outcome is shared).
"""

from __future__ import annotations

import numpy as np

from reprobench.s2b.speaker import EOS
from reprobench.s2b.vector_env import MetaReferentialGameVector

PLAYERS = ("speaker", "listener")


def regularise(messages: np.ndarray) -> np.ndarray:
    """The reference's channel regularisation: every token after the first EoS (0) becomes EoS. (n, L) -> copy."""
    out = np.array(messages, dtype=np.int64, copy=True)
    out[np.cumsum(out == EOS, axis=-1) > 0] = EOS
    return out


class MetaReferentialGameTwoPlayerVector:
    """num_envs two-player meta-referential games (see the module docstring). The constructor takes
    MetaReferentialGameVector's keyword arguments; the speaker is the learned one, so `speaker` must stay 'posdis'
    (the listener-side environment's own utterances are never shown) and provide_listener_feedback must be True."""

    def __init__(self, num_envs: int = 1, seed: int | None = 1337, **kwargs):
        if kwargs.get("speaker", "posdis") != "posdis":
            raise ValueError("speaker: the two-player game's speaker is the learned player; leave it 'posdis'")
        if not kwargs.get("provide_listener_feedback", False):
            raise ValueError("provide_listener_feedback must be True for the two-player game: the speaker's stimuli "
                             "are read from the feedback rows")
        self.game = MetaReferentialGameVector(num_envs=num_envs, seed=seed, **kwargs)
        self.config, self.num_envs = self.game.config, self.game.num_envs
        cfg = self.config
        self._shape = (self.num_envs, cfg.max_sentence_length)
        self._message = np.zeros(self._shape, dtype=np.int64)  # each speaker's last message (EoS: none yet)
        self._speaker_role = np.tile(np.array([1, 0], dtype=np.int8), (self.num_envs, 1))

    def current_spaces(self) -> list:
        """The current episodes' symbolic spaces (construct with keep_spaces=True)."""
        return self.game.current_spaces()

    def reset(self, *, seed=None, options=None):
        obs, info = self.game.reset(seed=seed, options=options)
        self._message = np.zeros(self._shape, dtype=np.int64)
        return self._observe(obs), info

    def step(self, speaker_messages, listener_decisions):
        messages = np.asarray(speaker_messages)
        v = self.config.vocab_size
        if messages.shape != self._shape or messages.dtype.kind not in "iu":
            raise ValueError(f"speaker_messages must be {self._shape} integer tokens, got shape {messages.shape} "
                             f"dtype {messages.dtype}")
        if (messages < 0).any() or (messages > v).any():
            raise ValueError(f"speaker_messages tokens must lie in [0, {v}] (0 is EoS), got {messages.tolist()}")
        resetting = self.game.resetting  # their actions are ignored: the reset observation shows nothing said
        obs, reward, terminated, truncated, info = self.game.step(listener_decisions)
        message = regularise(messages)
        message[resetting] = EOS
        self._message = message
        return self._observe(obs), reward, terminated, truncated, info

    def _observe(self, obs) -> dict[str, dict[str, np.ndarray]]:
        vocab = self.game.current_vocabularies()
        listener = {**obs, "communication_channel": np.take_along_axis(vocab, self._message, axis=1)}
        speaker = {**obs, "communication_channel": self._message.copy(), "role_id": self._speaker_role.copy(),
                   "stimulus": self.game.speaker_stimuli()}
        return {"speaker": speaker, "listener": listener}
