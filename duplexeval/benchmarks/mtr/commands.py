"""MTR-DuplexBench commands: `segment DIALOGUE` and `mtr render|score|fetch` (the family contributes them, plugin.py)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from duplexeval.judges.cache import MODES as CACHE_MODES


@click.command("segment")
@click.argument("dialogue", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--benchmark", default="mtr-quality", show_default=True, help="Benchmark spec whose vad/asr/segmentation blocks apply.")
@click.option("--judge", "judge_id", default=None, help="Segmentation judge id (default: the benchmark's).")
@click.option("--asr-model", default=None, help="Override the ASR with faster-whisper and this model (e.g. tiny.en).")
@click.option("--cache-mode", default="readwrite", show_default=True,
              type=click.Choice(CACHE_MODES), help="Judge cache mode.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the turns here (JSON); default: print them. The dialogue itself is never written.")
def segment(dialogue: Path, benchmark: str, judge_id: str | None, asr_model: str | None, cache_mode: str,
            out: Path | None) -> None:
    """User turns of a dual-channel dialogue (sidecar .json): VAD + ASR -> judge votes -> clustering."""
    from duplexeval.benchmarks.mtr.format import load_dialogue
    from duplexeval.benchmarks.mtr.segmentation import segment_dialogue
    from duplexeval.io import atomic_write_json
    from duplexeval.judges.cache import JudgeCache
    from duplexeval.judges.llm import load_judge
    from duplexeval.specs import Registry

    bench = dict(Registry.load().get("benchmark", benchmark).data)
    if asr_model:
        bench["asr"] = {"backend": "faster-whisper", "model": asr_model, "language": "en"}
    judge = load_judge(judge_id or bench["judges"]["segmentation"], JudgeCache(mode=cache_mode))
    d = load_dialogue(dialogue)
    user, asst = d.audio()
    seg = segment_dialogue(user, asst, d.rate, bench, judge, {"dialogue": str(d.audio_path)})
    data = {"dialogue": d.id, "source": str(dialogue), "segmentation": bench["segmentation"], **seg.as_json(len(user) / d.rate)}
    if out:
        atomic_write_json(out, data)
        click.echo(f"{len(seg.turns)} user turns -> {out}")
    else:
        click.echo(json.dumps(data["turns"], indent=1))


@click.group("mtr")
def mtr() -> None:
    """MTR-DuplexBench data and scoring (docs/mtr.md)."""


@mtr.command("render")
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--rate", default=16000, show_default=True, type=int)
def render(script: Path, out_dir: Path, rate: int) -> None:
    """Render a dialogue script file (kind mtr-dialogues) into stereo WAVs + sidecars."""
    import yaml

    from duplexeval.benchmarks.mtr.generate import render_script_file
    from duplexeval.cli_errors import CommandError, yaml_problem

    try:
        paths = render_script_file(script, out_dir, rate)
    except yaml.YAMLError as exc:
        raise CommandError(yaml_problem(script, exc)) from None
    for path in paths:
        click.echo(str(path))


@mtr.command("score")
@click.argument("bench_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--cache-mode", default="readwrite", show_default=True,
              type=click.Choice(CACHE_MODES))
@click.pass_context
def score(ctx: click.Context, bench_dir: Path, cache_mode: str) -> None:
    """Alias of `duplexeval score` (every benchmark of a run, or one <model>/<benchmark> folder)."""
    # Found by name on the root command, so the family does not import the commands above it.
    root = ctx.find_root()
    score_all = root.command.get_command(root, "score") if isinstance(root.command, click.Group) else None
    if score_all is None:
        raise click.UsageError("`duplexeval score` is not available to alias")
    ctx.invoke(score_all, run_dir=bench_dir, cache_mode=cache_mode)


@mtr.command("fetch")
@click.argument("dataset")
def fetch(dataset: str) -> None:
    """Download a public data set (advbench, llama-questions) into the data cache."""
    from duplexeval.benchmarks.mtr.datasets import DatasetUnavailable, fetch as fetch_dataset

    try:
        click.echo(str(fetch_dataset(dataset)))
    except KeyError as exc:  # an unknown name is a usage error (exit 2), not a quoted KeyError
        raise click.BadParameter(str(exc.args[0]), param_hint="DATASET") from None
    except DatasetUnavailable as exc:
        raise click.ClickException(str(exc)) from None


COMMANDS = [segment, mtr]
