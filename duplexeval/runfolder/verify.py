"""`duplexeval verify RUN`: is a run folder what its own hashes say it is?

The chain an auditor checks, bottom up (docs/reliability.md):

* each item's status.json vouches for its recording.wav and events.jsonl
  (`duplexeval.runner.integrity`);
* each results.json records the sha256 of the records it aggregates (`records_sha256`)
  and of every status.json it read (`inputs_sha256`);
* manifest.json records the sha256 of every results file (`results_sha256`, sealed after
  scoring by `seal_manifest`);
* every judge verdict a record cites by its cache key must be an intact cache entry.

A copied run verifies the same way: nothing here depends on the machine that ran it.
A finding names the file and what is wrong; `damaged` findings make verify fail,
`warnings` (unfinished items, cache entries absent on this machine, a killed write's temp
file) do not. The secrets
scan reports where a key-like string sits, never the string.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from duplexeval.io import TEMP_GLOB, atomic_write_json, read_jsonl, sha256_file, sha256_json
from duplexeval.runfolder.records import OutcomeWords, record_problems
from duplexeval.runner.integrity import STATUS_FILE, input_hashes, item_status
from duplexeval.secrets import secret_values

MANIFEST = "manifest.json"
# Files the manifest seals: everything scoring and planning write, beside the items.
RESULT_NAMES = ("results.json", "records.jsonl", "rounds.json", "scenes.json", "context.json", "benchmark.json",
                "model.json", "session_config.json")
RUN_RESULT_NAMES = ("summary.json", "statistics.json")
SCAN_SKIP_SUFFIXES = (".wav", ".flac", ".ogg", ".npy", ".pt", ".onnx", ".safetensors")
SCAN_MAX_BYTES = 64 << 20
# Shapes of provider keys and tokens; enough of each that prose cannot match.
SECRET_PATTERNS = (
    ("OpenAI-style key", re.compile(rb"sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}")),
    ("Hugging Face token", re.compile(rb"hf_[A-Za-z0-9]{30,}")),
    ("AWS access key", re.compile(rb"AKIA[0-9A-Z]{16}")),
    ("bearer token", re.compile(rb"Bearer\s+[A-Za-z0-9._~+/=-]{20,}")),
)
OFFLINE_JUDGE_LABEL = "offline heuristic judge"


@dataclass(frozen=True)
class Finding:
    path: Path
    problem: str
    damaged: bool = True  # False: a warning (verify still passes)

    def line(self, root: Path) -> str:
        try:
            where = self.path.relative_to(root)
        except ValueError:
            where = self.path
        return f"{'DAMAGED' if self.damaged else 'warning'} {where}: {self.problem}"


def result_files(run_dir: Path) -> list[Path]:
    """Every results file of a run (what the manifest seals), in a stable order."""
    found = [run_dir / n for n in RUN_RESULT_NAMES if (run_dir / n).is_file()]
    for name in RESULT_NAMES:
        found += [p for p in run_dir.rglob(name) if "items" not in p.relative_to(run_dir).parts]
    return sorted(set(found))


def results_hashes(run_dir: Path) -> dict[str, str]:
    return {str(p.relative_to(run_dir)): sha256_file(p) for p in result_files(run_dir)}


def seal_manifest(run_dir: str | Path) -> None:
    """Records the sha256 of every results file in manifest.json (after scoring; rescoring re-seals)."""
    run_dir = Path(run_dir)
    path = run_dir / MANIFEST
    if not path.is_file():
        return  # a bare bench folder scored on its own has no manifest to seal
    try:
        manifest = json.loads(path.read_text("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable ({exc}); not resealing a damaged manifest (restore it from the "
                         "run's copy; `duplexeval verify` lists the damage)") from None
    if not isinstance(manifest, dict):
        raise ValueError(f"{path}: not a JSON object; not resealing a damaged manifest")
    manifest["results_sha256"] = results_hashes(run_dir)
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    atomic_write_json(path, {**body, "manifest_sha256": sha256_json(body)})  # vouches for its own fields


def seal_enclosing_manifest(bench_dir: str | Path) -> None:
    """Re-seals the manifest of the run holding bench_dir (<run>/<model>/<benchmark>), if any."""
    bench_dir = Path(bench_dir).resolve()
    for parent in (bench_dir, *bench_dir.parents[:3]):
        if (parent / MANIFEST).is_file():
            seal_manifest(parent)
            return


def _read_json(path: Path, findings: list[Finding]) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        findings.append(Finding(path, "missing"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        findings.append(Finding(path, f"unreadable JSON ({exc})"))
    return None


def check_manifest(run_dir: Path) -> list[Finding]:
    """The manifest is required and sealed: its own sha256 and that of every results file.

    Without it (deleted) or without its seal (replaced by an unsealed one), an edited
    results.json would read as intact, so both are damage once the run has results; a run
    stopped before anything was scored has nothing to seal yet (a warning).
    """
    findings: list[Finding] = []
    path = run_dir / MANIFEST
    has_results = bool(result_files(run_dir))
    if not path.exists():
        if has_results:
            findings.append(Finding(path, "missing: nothing vouches for the run's results (a run writes and seals "
                                          "it; restore it from the run's copy)"))
        elif any(run_dir.glob("*/*/items")):
            findings.append(Finding(path, "missing: the run was never planned here", damaged=False))
        return findings
    manifest = _read_json(path, findings)
    if manifest is None:
        return findings
    if not isinstance(manifest, dict):
        return [Finding(path, "not a JSON object")]
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    if "manifest_sha256" in manifest:
        if sha256_json(body) != manifest["manifest_sha256"]:
            findings.append(Finding(path, "its fields do not match its own manifest_sha256 (edited or altered)"))
    elif has_results:
        findings.append(Finding(path, "not sealed (no manifest_sha256) although the run has results: the run did "
                                      "not finish scoring (resume it) or the manifest was replaced"))
    sealed = manifest.get("results_sha256")
    if not isinstance(sealed, dict):
        return findings + [Finding(path, "records no results_sha256 (the run did not finish scoring)",
                                   damaged=has_results)]
    actual = results_hashes(run_dir)
    for rel, expected in sorted(sealed.items()):
        if rel not in actual:
            findings.append(Finding(run_dir / rel, "missing (manifest.json records it)"))
        elif actual[rel] != expected:
            findings.append(Finding(run_dir / rel, f"sha256 {actual[rel][:12]}... differs from manifest.json's "
                                                   f"{str(expected)[:12]}... (altered after the run)"))
    for rel in sorted(set(actual) - set(sealed)):
        findings.append(Finding(run_dir / rel, "not recorded in manifest.json (added after the run)"))
    return findings


def check_items(bench_dir: Path) -> list[Finding]:
    findings = []
    items = bench_dir / "items"
    for d in sorted(p for p in items.iterdir() if p.is_dir()) if items.is_dir() else []:
        st = item_status(d)
        if st is None:
            findings.append(Finding(d, "unfinished (no status.json)", damaged=False))
        elif st.get("error_code") == "DAMAGED":
            where, sep, problem = st["reason"].partition(": ")
            findings.append(Finding(Path(where), problem) if sep and where.startswith(str(d)) else
                            Finding(d, st["reason"]))
    return findings


MAX_RECORD_FINDINGS = 5   # per records.jsonl; the rest are counted


def folder_family(bench_dir: Path) -> str:
    """The family of a folder by the spec snapshot the run wrote beside it ('' when it has none)."""
    try:
        data = json.loads((bench_dir / "benchmark.json").read_text("utf-8"))
    except (OSError, ValueError):
        return ""
    return str(data.get("benchmark") or "") if isinstance(data, dict) else ""


def check_records(records_path: Path, records: list[Any], outcomes: OutcomeWords) -> list[Finding]:
    """records.jsonl against specs/schema/records.schema.json and its family's outcome words."""
    problems = record_problems(records, outcomes)
    findings = [Finding(records_path, p) for p in problems[:MAX_RECORD_FINDINGS]]
    if len(problems) > MAX_RECORD_FINDINGS:
        findings.append(Finding(records_path, f"and {len(problems) - MAX_RECORD_FINDINGS} more departures "
                                              "from specs/schema/records.schema.json"))
    return findings


def check_results(bench_dir: Path, outcomes: OutcomeWords = None) -> tuple[list[Finding], list[dict[str, Any]]]:
    """results.json against records.jsonl and the items it read; returns the records too.
    `outcomes`: the folder's family's outcome words (None: any word)."""
    findings: list[Finding] = []
    results_path, records_path = bench_dir / "results.json", bench_dir / "records.jsonl"
    if not results_path.exists() and not records_path.exists():
        if (bench_dir / "items").is_dir():
            findings.append(Finding(results_path, "missing: the folder was never scored", damaged=False))
        return findings, []
    results = _read_json(results_path, findings)
    try:
        records = read_jsonl(records_path)
    except FileNotFoundError:
        findings.append(Finding(records_path, "missing"))
        records = None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        findings.append(Finding(records_path, str(exc).removeprefix(f"{records_path}:").lstrip() or "unreadable"))
        records = None
    if not isinstance(results, dict):
        if results is not None:
            findings.append(Finding(results_path, "not a JSON object"))
        return findings, records or []
    if records is not None and "records_sha256" in results and sha256_json(records) != results["records_sha256"]:
        findings.append(Finding(records_path, "differs from the records results.json was computed from "
                                              "(records_sha256)"))
    if records:
        findings += check_records(records_path, records, outcomes)
        findings += check_record_hashes(bench_dir, records)
    inputs = results.get("inputs_sha256")
    if isinstance(inputs, dict):
        actual = input_hashes(bench_dir)
        for item in sorted(set(inputs) | set(actual)):
            path = bench_dir / "items" / item / STATUS_FILE
            if item not in actual:
                findings.append(Finding(path, "missing (results.json was computed from it)"))
            elif item not in inputs:
                findings.append(Finding(path, "not among the items results.json was computed from (stale results)"))
            elif inputs[item] != actual[item]:
                findings.append(Finding(path, "differs from the status.json results.json was computed from"))
    return findings, records or []


def check_record_hashes(bench_dir: Path, records: list[Any]) -> list[Finding]:
    """Each record's own hashes of its item's recording and events against the item's status.json."""
    findings, statuses = [], {}
    for r in records:
        if not isinstance(r, dict) or not isinstance(r.get("item"), str):
            continue
        raw = r.get("hashes")
        hashes: dict[str, Any] = raw if isinstance(raw, dict) else {}
        cited = {"recording": hashes.get("recording", r.get("recording_sha256")), "events": hashes.get("events")}
        item = r["item"]
        if item not in statuses:
            try:
                statuses[item] = json.loads((bench_dir / "items" / item / STATUS_FILE).read_text("utf-8"))
            except (OSError, ValueError):
                statuses[item] = None  # reported by check_items / check_results already
        st = statuses[item]
        if not isinstance(st, dict):
            continue
        for name, value in cited.items():
            recorded = st.get(f"{name}_sha256")
            if isinstance(value, str) and isinstance(recorded, str) and value != recorded:
                findings.append(Finding(bench_dir / "items" / item / STATUS_FILE,
                                        f"records.jsonl scored a different {name} than status.json vouches for"))
                statuses[item] = None  # once per item
                break
    return findings


def cited_cache_keys(records: Iterable[dict[str, Any]]) -> list[str]:
    keys = []
    for r in records:
        # Offline heuristic judges compute their verdicts again on replay; nothing is cached.
        if not isinstance(r, dict) or OFFLINE_JUDGE_LABEL in str(r.get("judge_label", "")):
            continue
        for field in ("cache_key", "verdict_key"):
            if isinstance(r.get(field), str):
                keys.append(r[field])
        if isinstance(r.get("cache_keys"), list):
            keys += [k for k in r["cache_keys"] if isinstance(k, str)]
    return sorted(set(keys))


def check_cache(keys: list[str], cache_root: Path) -> list[Finding]:
    from duplexeval.judges.cache import CorruptEntry, JudgeCache

    cache = JudgeCache(cache_root, mode="read")
    findings, absent = [], 0
    for key in keys:
        if not re.fullmatch(r"[0-9a-f]{64}", key):
            findings.append(Finding(cache_root, f"a record cites {key[:40]!r}, which is not a cache key"))
            continue
        try:
            cache.load(key)
        except FileNotFoundError:
            absent += 1
        except CorruptEntry as exc:
            findings.append(Finding(cache.path(key), str(exc).removeprefix(f"{cache.path(key)}: ")))
    if absent:
        findings.append(Finding(cache_root, f"{absent} of {len(keys)} cited judge verdicts are not in this cache "
                                            "(copy the run's cache to replay them offline)", damaged=False))
    return findings


def _secret_values() -> list[bytes]:
    return [v.encode() for v in secret_values().values()]


def scan_secrets(root: Path, extra: Iterable[str] = ()) -> list[Finding]:
    """Files under root holding a key-like string or the value of a key variable set here."""
    values = _secret_values() + [v.encode() for v in extra if len(v) >= 8]
    findings = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.suffix.lower() in SCAN_SKIP_SUFFIXES:
            continue
        try:
            if path.stat().st_size > SCAN_MAX_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        hits = [name for name, pattern in SECRET_PATTERNS if pattern.search(data)]
        hits += ["the value of an API-key variable set in this shell" for v in values if v in data]
        for what in dict.fromkeys(hits):
            line = _line_of(data, what, values)
            findings.append(Finding(path, f"line {line}: holds what looks like a secret ({what}; not shown)"))
    return findings


def _line_of(data: bytes, what: str, values: list[bytes]) -> int:
    for name, pattern in SECRET_PATTERNS:
        if name == what and (m := pattern.search(data)):
            return data.count(b"\n", 0, m.start()) + 1
    for v in values:
        if (i := data.find(v)) >= 0:
            return data.count(b"\n", 0, i) + 1
    return 1


def bench_folders(run_dir: Path) -> list[Path]:
    """Every folder holding items/ or a results.json (text-reference rows have no items)."""
    found = {p.parent for p in run_dir.rglob("items") if p.is_dir() and (p.parent == run_dir or "items" not in
                                                                          p.parent.relative_to(run_dir).parts)}
    found |= {p.parent for p in run_dir.rglob("results.json") if "items" not in p.relative_to(run_dir).parts}
    return sorted(found)


def verify_run(run_dir: str | Path, *, cache_root: Path | None = None, secrets: bool = True,
               outcomes: Mapping[str, OutcomeWords] | None = None) -> list[Finding]:
    """Every finding of a run folder (or of one <model>/<benchmark> folder). `outcomes`: family ->
    its outcome words (`Benchmark.outcomes`, handed in by the command); a family not in it is
    checked against the records schema alone."""
    from duplexeval.judges.cache import default_cache_root

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir}: not a run folder")
    findings = check_manifest(run_dir)
    keys: list[str] = []
    folders = bench_folders(run_dir)
    if not folders and not (run_dir / MANIFEST).exists():
        raise FileNotFoundError(f"{run_dir}: no manifest.json, items/ or results.json: not a run folder")
    for folder in folders:
        findings += check_items(folder)
        found, records = check_results(folder, (outcomes or {}).get(folder_family(folder)))
        findings += found
        keys += cited_cache_keys(records)
    if keys:
        findings += check_cache(sorted(set(keys)), cache_root or default_cache_root())
    findings += [Finding(tmp, "a temp file of a write that a kill interrupted (never read; a resume of the run "
                              "removes those at a job folder's top level)", damaged=False)
                 for tmp in sorted(run_dir.rglob(TEMP_GLOB)) if tmp.is_file()]
    if secrets:
        findings += scan_secrets(run_dir)
    return findings
