"""Duplex-MPE stimuli: scene files -> conversations -> rendered turns -> scheduler.

Public surface (re-exported here so callers need not know the module layout).
"""

from duplexeval.benchmarks.mpe.scenes.loader import EMBEDDED_SCENES, load_scene, load_scenes, validate_scene_data
from duplexeval.benchmarks.mpe.scenes.model import CONDITIONS, LABELS, ConversationTurn, Scene, SceneTurn, conversation

__all__ = [
    "CONDITIONS", "EMBEDDED_SCENES", "LABELS", "ConversationTurn", "Scene", "SceneTurn",
    "conversation", "load_scene", "load_scenes", "validate_scene_data",
]
