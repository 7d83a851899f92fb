"""Duplex-MPE commands: `scenes validate|render|generate` (the family contributes them, plugin.py)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from duplexeval.benchmarks.mpe.scenes.loader import EMBEDDED_SCENES
from duplexeval.judges.cache import MODES as CACHE_MODES


def _bench_spec(spec_path: str | None, benchmark: str) -> dict:
    from duplexeval.specs import Registry, load_spec

    if spec_path:
        return load_spec(Path(spec_path), "benchmark").data
    return Registry.load().get("benchmark", benchmark).data


@click.group("scenes")
def scenes() -> None:
    """Duplex-MPE scene files: validate, render (TTS), generate (LLM)."""


@scenes.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
def validate(paths: tuple[Path, ...]) -> None:
    """Validate scene files or folders (default: the embedded suite); every error is printed."""
    from duplexeval.benchmarks.mpe.scenes.loader import load_scenes
    from duplexeval.benchmarks.mpe.scenes.rules import n4_placement_counts
    from duplexeval.specs.errors import SpecErrors

    scenes = []
    failed = False
    for path in paths or (EMBEDDED_SCENES,):
        try:
            scenes += load_scenes(path)
        except SpecErrors as exc:
            click.echo(str(exc), err=True)
            failed = True
    if failed:
        raise SystemExit(1)
    n4 = n4_placement_counts(scenes)
    # The paper's App. A2.2 / Table 7 counts, for comparing a generated set (docs/mpe.md).
    click.echo(f"{len(scenes)} scenes valid; {n4['scenes_with_n4_after_t']} with an N4 after T, "
               f"{n4['scenes_with_n4_before_t']} with one before T; N4 events: {n4['n4_events']} "
               f"({n4['n4_events_after_t']} after T, {n4['n4_events_before_t']} before T)")


@scenes.command("render")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--condition", type=click.Choice(["explicit", "implicit", "both"]), default="both", show_default=True)
@click.option("--spec", "spec_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Benchmark spec file (default: the registry's mpe-explicit).")
def render(paths: tuple[Path, ...], out: Path, condition: str, spec_path: str | None) -> None:
    """Render conversations as a silent model would hear them: <out>/<scene>.<condition>.wav + .events.jsonl."""
    import numpy as np

    from duplexeval.audio import write_wav
    from duplexeval.benchmarks.mpe.scenes.loader import load_scenes
    from duplexeval.benchmarks.mpe.scenes.render import render_turns
    from duplexeval.benchmarks.mpe.scenes.scheduler import MPEScheduler
    from duplexeval.io import atomic_write_jsonl

    spec = _bench_spec(spec_path, "mpe-explicit")
    rate = int(spec["audio"]["rate"])
    conditions = ["explicit", "implicit"] if condition == "both" else [condition]
    for path in paths or (EMBEDDED_SCENES,):
        for scene in load_scenes(path):
            for cond in conditions:
                sch = MPEScheduler(render_turns(scene, cond, rate), spec)
                frame = rate // 10
                sch.bind(rate, frame)
                frames, events, n = [], [], 0
                while (x := sch.next_input(n)) is not None:
                    sch.observe_output(n, np.zeros(frame, dtype=np.float32))
                    frames.append(x)
                    events += sch.drain_events()
                    n += 1
                events += sch.drain_events()
                write_wav(out / f"{scene.id}.{cond}.wav", np.concatenate(frames), rate)
                atomic_write_jsonl(out / f"{scene.id}.{cond}.events.jsonl", events)
                click.echo(f"{scene.id} {cond}: {len(frames) * frame / rate:.1f} s")


@scenes.command("generate")
@click.option("--attributes", "attributes_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              required=True, help="YAML or JSON list of {setting, activity, relationship, devices, register}.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--judge", "judge_id", default="mpe-scene-generation", show_default=True)
@click.option("--cache-mode", default="readwrite", show_default=True,
              type=click.Choice(CACHE_MODES))
@click.option("--attempts", default=3, show_default=True, help="Independent samples tried per scene.")
@click.option("--first-index", default=0, show_default=True, type=click.IntRange(min=0),
              help="The scene index of the file's first attribute set (a chunk of a larger set).")
def generate(attributes_file: Path, out: Path, judge_id: str, cache_mode: str, attempts: int, first_index: int) -> None:
    """Write new scenes with an LLM; each is validated (schema + rules) before it is written.

    Resumable: scenes OUT already holds for their index are kept; a failed index is tried
    again with more samples (raise --attempts: the samples tried before replay from the
    judge cache). With scene_plan totals, prints which planned indices OUT still lacks."""
    import yaml

    from duplexeval.benchmarks.mpe.scenes.generate import generate_scenes
    from duplexeval.benchmarks.mpe.scenes.loader import load_scenes
    from duplexeval.benchmarks.mpe.scenes.plan import ScenePlan
    from duplexeval.judges.cache import JudgeCache
    from duplexeval.judges.llm import Judge
    from duplexeval.specs import Registry

    spec = Registry.load().get("judge", judge_id)
    writer = Judge.from_spec(spec.data, spec.path, JudgeCache(mode=cache_mode))
    from duplexeval.cli_errors import CommandError, yaml_problem

    try:
        plan = ScenePlan.from_spec(spec.data, str(spec.path))
    except ValueError as exc:
        raise CommandError(str(exc)) from None

    try:
        attribute_sets = yaml.safe_load(attributes_file.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CommandError(yaml_problem(attributes_file, exc)) from None
    if plan.quotas and isinstance(attribute_sets, list) and first_index + len(attribute_sets) > len(plan.quotas):
        raise CommandError(f"{attributes_file}: {len(attribute_sets)} attribute sets from index {first_index}, but "
                           f"{spec.path}'s scene_plan.totals plans {len(plan.quotas)} scenes")
    template = load_scenes(EMBEDDED_SCENES)[0]  # the embedded suite's voices and preamble
    try:
        report = generate_scenes(writer, attribute_sets, out, speakers=template.speakers,
                                 preamble={"text": template.preamble_text, "voice": template.preamble_voice},
                                 plan=plan, attempts=attempts, first_index=first_index)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    for line in report.rejected:
        click.echo(f"rejected: {line}", err=True)
    summary: dict[str, object] = {"written": len(report.written), "kept": len(report.kept), "failed": report.failed}
    if report.missing is not None:
        summary.update(missing=len(report.missing), totals_met=report.totals_met,
                       first_missing=report.missing[:10])
    click.echo(json.dumps(summary))
    if report.failed:
        raise SystemExit(1)


COMMANDS = [scenes]
