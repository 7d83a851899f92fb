"""`duplexeval cache ls|verify|prune|export`: look after the judge cache.

`verify` is what an auditor runs before trusting a replay: it recomputes every key from
the components stored next to the verdict and the hash of the stored answer, and exits 1
if any entry is corrupt or mismatched.
"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import click

from duplexeval.io import atomic_write_bytes
from duplexeval.judges.cache import JudgeCache, Problem, default_cache_root

_root_option = click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
                            help="Judge cache folder (default: $DUPLEXEVAL_CACHE/judges or ./.cache/judges).")


def _cache(root: Path | None) -> JudgeCache:
    return JudgeCache(root if root is not None else default_cache_root(), mode="read")


@click.group("cache")
def cache_group() -> None:
    """Inspect, verify, prune and export the judge cache."""


@cache_group.command("ls")
@_root_option
@click.option("--judge", "judge_id", default=None, help="Only entries of this judge id.")
def ls_command(root: Path | None, judge_id: str | None) -> None:
    """One line per entry: key, judge, provider, model, answer length (corrupt entries marked)."""
    cache = _cache(root)
    count = 0
    for entry in cache.entries():
        if isinstance(entry, Problem):
            click.echo(f"{entry.path.stem}  CORRUPT  {entry.problem}")
            continue
        if judge_id and entry.meta.get("judge_id") != judge_id:
            continue
        c = entry.components
        model = c["model"] + (f"@{c['snapshot']}" if c.get("snapshot") else "")
        click.echo(f"{entry.key}  {entry.meta.get('judge_id', '?')}  {c['provider']}  {model}  "
                   f"sample={c.get('sample', 0)}  {len(entry.response['text'])} chars")
        count += 1
    click.echo(f"{count} entries in {cache.root}", err=True)


@cache_group.command("verify")
@_root_option
def verify_command(root: Path | None) -> None:
    """Recompute every key and answer hash; exit 1 if any entry is corrupt or mismatched."""
    cache = _cache(root)
    problems = cache.verify()
    total = sum(1 for _ in cache.entry_paths())
    for p in problems:
        click.echo(f"BAD {p.path}: {p.problem}")
    click.echo(f"verified {total} entries in {cache.root}: {len(problems)} problem(s)")
    if problems:
        raise SystemExit(1)


@cache_group.command("explain")
@_root_option
@click.argument("key")
def explain_command(root: Path | None, key: str) -> None:
    """Show the key components stored with KEY (exit 1 when KEY is not a stored, intact entry)."""
    from duplexeval.judges.cache import CorruptEntry

    cache = _cache(root)
    if not re.fullmatch(r"[0-9a-f]{64}", key):
        raise click.BadParameter(f"{key[:80]!r} is not a cache key (64 lowercase hex digits)", param_hint="KEY")
    try:
        cache.load(key)
    except (FileNotFoundError, CorruptEntry) as exc:
        reason = "not in the cache" if isinstance(exc, FileNotFoundError) else f"corrupt entry ({exc})"
        click.echo(f"key {key}: {reason} ({cache.root})", err=True)
        raise SystemExit(1) from None
    click.echo(cache.explain(key))


def _positive_days(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """An age that bounds the request: finite and above zero (0 or a negative age means every entry)."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"{value} would select every entry; give a positive number of days",
                                 ctx=ctx, param=param)
    return value


@cache_group.command("prune")
@_root_option
@click.option("--corrupt", is_flag=True, help="Delete corrupt entries and leftover temp files.")
@click.option("--older-than-days", type=float, default=None, callback=_positive_days,
              help="Delete entries not modified for this many days (> 0).")
@click.option("--judge", "judge_id", default=None, help="Delete every entry of this judge id.")
@click.option("--dry-run", is_flag=True, help="Only list what would be deleted (the default without --yes).")
@click.option("--yes", is_flag=True, help="Delete what is listed. Without it nothing is deleted: verdicts of paid "
                                          "judge calls cannot be replayed once gone.")
def prune_command(root: Path | None, corrupt: bool, older_than_days: float | None, judge_id: str | None,
                  dry_run: bool, yes: bool) -> None:
    """Delete entries by condition (nothing without a condition, nothing without --yes)."""
    if not (corrupt or older_than_days is not None or judge_id):
        raise click.UsageError("say what to prune: --corrupt, --older-than-days N or --judge ID")
    cache = _cache(root)
    doomed = prune_candidates(cache, corrupt=corrupt, older_than_days=older_than_days, judge_id=judge_id)
    delete = yes and not dry_run
    for path in doomed:
        click.echo(("deleted " if delete else "would delete ") + str(path))
        if delete:
            path.unlink(missing_ok=True)
    if delete:
        click.echo(f"{len(doomed)} entries pruned")
    else:
        click.echo(f"{len(doomed)} entries to prune; nothing deleted" + ("" if dry_run else " (add --yes to delete them)"))


def prune_candidates(cache: JudgeCache, *, corrupt: bool, older_than_days: float | None,
                     judge_id: str | None) -> list[Path]:
    """The entry files a prune request names, and no others."""
    cutoff = time.time() - older_than_days * 86400 if older_than_days is not None else None
    doomed: list[Path] = []
    for entry in cache.entries():
        if isinstance(entry, Problem):
            if corrupt:
                doomed.append(entry.path)
            continue
        if judge_id and entry.meta.get("judge_id") == judge_id:
            doomed.append(entry.path)
        elif cutoff is not None and entry.path.stat().st_mtime < cutoff:
            doomed.append(entry.path)
    if corrupt:
        doomed += [p.path for p in cache.verify() if p.problem == "leftover temporary file"]
    return doomed


@cache_group.command("export")
@_root_option
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path))
@click.option("--judge", "judge_id", default=None, help="Only entries of this judge id.")
def export_command(root: Path | None, dest: Path, judge_id: str | None) -> None:
    """Copy verified entries to DEST (same layout), e.g. to ship replay cassettes in golden/.

    Corrupt entries are never exported; the command fails if it finds any.
    """
    cache = _cache(root)
    exported = 0
    bad = 0
    for entry in cache.entries():
        if isinstance(entry, Problem):
            click.echo(f"skipped corrupt {entry.path}: {entry.problem}", err=True)
            bad += 1
            continue
        if judge_id and entry.meta.get("judge_id") != judge_id:
            continue
        atomic_write_bytes(dest / entry.key[:2] / entry.path.name, entry.path.read_bytes())
        exported += 1
    click.echo(f"exported {exported} entries to {dest}")
    if bad:
        raise SystemExit(1)


COMMANDS = [cache_group]
