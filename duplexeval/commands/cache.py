"""`duplexeval cache ls|verify|explain|prune|export`: look after the caches.

Every cache is one content store (duplexeval/store.py): the judge cache by default, any
other with `--store asr|vad|tts|cascade-asr` (ls, verify, explain). `verify` is what an
auditor runs before trusting a replay: it recomputes every key from the components stored
next to the result (and, for judges, the hash of the stored answer), and exits 1 if any
entry is corrupt or mismatched. `explain KEY` lists a stored entry's components;
`explain --components FILE` explains a miss: which components differ from the nearest entry.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import click

from duplexeval.cli_params import Finite
from duplexeval.io import atomic_write_bytes
from duplexeval.judges.cache import JudgeCache, Problem, default_cache_root
from duplexeval.store import KINDS, ContentStore

_root_option = click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
                            help="The store's folder (default: $DUPLEXEVAL_CACHE/<store>, e.g. ./.cache/judges).")
_store_option = click.option("--store", "kind", type=click.Choice(list(KINDS)), default="judges", show_default=True,
                             help="Which cache: judge verdicts, ASR transcripts, VAD episodes, TTS clips, "
                                  "the cascade agent's transcripts.")


def _cache(root: Path | None) -> JudgeCache:
    return JudgeCache(root if root is not None else default_cache_root(), mode="read")


def _store(kind: str, root: Path | None) -> ContentStore:
    return _cache(root).store if kind == "judges" else ContentStore.of(kind, root)


@click.group("cache")
def cache_group() -> None:
    """Inspect, verify and explain the caches; prune and export the judge cache."""


@cache_group.command("ls")
@_root_option
@_store_option
@click.option("--judge", "judge_id", default=None, help="Only entries of this judge id.")
def ls_command(root: Path | None, kind: str, judge_id: str | None) -> None:
    """One line per entry: key, judge, provider, model, answer length (corrupt entries marked);
    another store: key and its components' names."""
    if kind != "judges":
        store = _store(kind, root)
        count = 0
        for found in store.entries():
            if isinstance(found, Problem):
                click.echo(f"{found.path.stem}  CORRUPT  {found.problem}")
                continue
            click.echo(f"{found['key']}  {', '.join(sorted(found['components']))}")
            count += 1
        click.echo(f"{count} entries in {store.root}", err=True)
        return
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
@_store_option
def verify_command(root: Path | None, kind: str) -> None:
    """Recompute every key (and answer or file hash); exit 1 if any entry is corrupt or mismatched."""
    store = _store(kind, root)
    problems = _cache(root).verify() if kind == "judges" else store.verify()
    total = sum(1 for _ in store.entry_paths())
    for p in problems:
        click.echo(f"BAD {p.path}: {p.problem}")
    click.echo(f"verified {total} entries in {store.root}: {len(problems)} problem(s)")
    if problems:
        raise SystemExit(1)


@cache_group.command("explain")
@_root_option
@_store_option
@click.option("--components", "components_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="A JSON file of the components a lookup wanted (an entry file, or its "
                                 "`components` alone): say which differ from the nearest stored entry.")
@click.argument("key", required=False)
def explain_command(root: Path | None, kind: str, components_file: Path | None, key: str | None) -> None:
    """Show the key components stored with KEY (exit 1 when KEY is not a stored, intact entry), or
    explain a miss: which of the wanted components (--components) differ from the nearest entry."""
    from duplexeval.judges.cache import CorruptEntry

    if (key is None) == (components_file is None):
        raise click.UsageError("give a KEY to show, or --components FILE to explain a miss (one of them)")
    store = _store(kind, root)
    if components_file is not None:
        try:
            wanted = json.loads(components_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise click.BadParameter(f"{components_file}: not JSON ({exc})", param_hint="--components") from None
        wanted = wanted.get("components", wanted) if isinstance(wanted, dict) else wanted
        if not isinstance(wanted, dict):
            raise click.BadParameter(f"{components_file}: not a JSON object of components", param_hint="--components")
        hit = store.key(wanted)
        click.echo(f"key {hit}: " + ("stored" if store.path(hit).exists() else "a miss"))
        click.echo(store.explain_miss(wanted))
        return
    assert key is not None
    if not re.fullmatch(r"[0-9a-f]{64}", key):
        raise click.BadParameter(f"{key[:80]!r} is not a cache key (64 lowercase hex digits)", param_hint="KEY")
    try:
        _cache(root).load(key) if kind == "judges" else store.read(key)
    except (FileNotFoundError, CorruptEntry) as exc:
        reason = "not in the cache" if isinstance(exc, FileNotFoundError) else f"corrupt entry ({exc})"
        click.echo(f"key {key}: {reason} ({store.root})", err=True)
        raise SystemExit(1) from None
    click.echo(_cache(root).explain(key) if kind == "judges" else store.explain(key))


@cache_group.command("prune")
@_root_option
@click.option("--corrupt", is_flag=True, help="Delete corrupt entries and leftover temp files.")
@click.option("--older-than-days", type=Finite(0.0, 365000.0, low_open=True), default=None,
              help="Delete entries not modified for this many days (> 0; 0 or less would select every entry).")
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
