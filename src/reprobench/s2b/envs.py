"""Gymnasium registration of the S2B environments. Importing this module registers them (gymnasium's own pattern),
so the module-prefixed id needs no import of ours:
gymnasium.make("reprobench.s2b.envs:reprobench/MetaReferentialGame-v0").

    import reprobench.s2b.envs  # or: from reprobench.s2b.envs import register_envs; register_envs()
    env = gymnasium.make("reprobench/MetaReferentialGame-v0", descriptive=True, nbr_distractors=0)
    envs = gymnasium.make_vec("reprobench/MetaReferentialGame-v0", num_envs=256)   # MetaReferentialGameVector
    recall = gymnasium.make("reprobench/MetaReferentialGameRecall-v0", representation="ohe")
    recalls = gymnasium.make_vec("reprobench/MetaReferentialGameRecall-v0", num_envs=64)  # RecallGameVector

The ids carry the reference's constructor defaults (specs/s2b.md section 2.1); pass keyword arguments to change them.
"""

from __future__ import annotations

import gymnasium

GAME_ID = "reprobench/MetaReferentialGame-v0"
RECALL_ID = "reprobench/MetaReferentialGameRecall-v0"
_ENTRY_POINTS = {
    GAME_ID: {"entry_point": "reprobench.s2b.env:MetaReferentialGame",
              "vector_entry_point": "reprobench.s2b.vector_env:MetaReferentialGameVector"},
    RECALL_ID: {"entry_point": "reprobench.s2b.recall:RecallGame",
                "vector_entry_point": "reprobench.s2b.recall_vector:RecallGameVector"},
}


def register_envs() -> None:
    """Register the S2B ids with gymnasium (make_vec uses the vector entry point by default). Idempotent: an id that
    is already registered is left alone."""
    for env_id, kwargs in _ENTRY_POINTS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, **kwargs)


register_envs()
