"""Duplex-MPE items of a job: one conversation per scene, rendered lazily.

The factory renders on demand so a resumed run spends no TTS on finished items.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from duplexeval.runner.stimulus import Stimulus
from duplexeval.scenes.loader import load_scenes
from duplexeval.scenes.render import render_turns
from duplexeval.scenes.scheduler import MPEScheduler
from duplexeval.specs import repo_root


def load_bench_scenes(bench: dict[str, Any], limit: int | None = None) -> list:
    data = bench["data"]
    if data.get("source") != "embedded" or "path" not in data:
        raise FileNotFoundError(
            f"benchmark {bench['id']}: data source {data.get('source')!r} ({data.get('dataset', '?')}) is not on this "
            "machine; run a suite whose overrides point data.path at scene files (e.g. the embedded suite)")
    scenes = load_scenes(repo_root() / Path(data["path"]))
    return scenes[:limit] if limit else scenes


def mpe_items(bench: dict[str, Any], limit: int | None = None) -> list[tuple[str, Callable[[], Stimulus]]]:
    scenes = load_bench_scenes(bench, limit)
    rate = int(bench["audio"]["rate"])
    condition = bench["condition"]

    def factory(scene) -> Callable[[], Stimulus]:
        return lambda: MPEScheduler(render_turns(scene, condition, rate, tts=bench.get("tts")), bench)

    return [(scene.id, factory(scene)) for scene in scenes]
