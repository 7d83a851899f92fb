"""What each documented reading moves: a run re-scored under every alternative rule choice.

A published number depends on readings (docs/architecture.md, "Readings"): choices such
as how speech is counted in a window. `sensitivity` takes a finished run and, per
<model>/<benchmark> folder, re-scores it once under the readings the run used (the
baseline, so a code change since the run does not pass for a reading's effect) and once
per alternative value of each reading, then diffs every metric and every record's outcome (`moves`: per record metric, from ->
to with counts, so a unit moved into a category without a metric of its own still shows;
readings marked `x-reading-rescore: false` are listed in `not_rescorable`, with why,
since another value needs a new run). Scoring works from the
recordings and the caches only: the judge cache is read in `replay` mode, so an
alternative that would need an uncached (paid) judge call fails loudly instead of calling.

Re-scoring never touches the run: each one happens in a scratch mirror of the folder
whose files are symlinks to the run's (the scorers write atomically, temp file + rename,
so a write replaces the link and never the run's file). Results land in
`sensitivity.json` (atomically, at the end), which the report renders.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.io import read_jsonl
from duplexeval.judges.cache import CacheMiss
from duplexeval.reports.sensitivity import SCHEMA
from duplexeval.specs.readings import benchmark_readings, with_reading


@dataclass(frozen=True)
class Switch:
    """One reading set to one value (`FIELD=VALUE` on the command line)."""

    field: str
    value: Any

    @classmethod
    def parse(cls, text: str) -> "Switch":
        field, sep, value = text.partition("=")
        if not sep or not field.strip() or not value.strip():
            raise ValueError(f"--switch {text!r}: expected FIELD=VALUE, e.g. metrics.answer.response_end=episode")
        return cls(field.strip(), _parse_value(value.strip()))

    def label(self) -> str:
        return f"{self.field}={self.value}"


def _parse_value(text: str) -> Any:
    """YAML's scalars (true, 1.5, a name), as a spec file would read them."""
    import yaml

    return yaml.safe_load(text)


def flat_metrics(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every metric of a results.json (value with numerator / denominator), by dotted path.

    Top-level `metrics` and per-round `rounds` both count; nested metric dicts (e.g. a
    rate kept inside another metric) are found by their shape, not by a family's names.
    """
    out: dict[str, dict[str, Any]] = {}

    def walk(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            return
        if "value" in node and ("numerator" in node or "denominator" in node):
            out[path] = {k: node.get(k) for k in ("value", "numerator", "denominator")}
        for key, sub in node.items():
            if isinstance(sub, dict):
                walk(sub, f"{path}.{key}" if path else str(key))

    walk(results.get("metrics") or {}, "")
    for rnd, sub in (results.get("rounds") or {}).items():
        walk(sub, f"rounds.{rnd}")
    return out


def alternatives(spec: dict[str, Any], switches: list[Switch]) -> list[Switch]:
    """The switches to try on one folder's spec: the requested ones that are readings of
    this spec, or else every other named value of every reading it has."""
    found = {f: e for f, e in benchmark_readings(spec).items() if e["rescore"]}
    if switches:
        return [s for s in switches if s.field in found and s.value != found[s.field]["value"]]
    return [Switch(field, value) for field, entry in found.items() for value in entry["values"] if value != entry["value"]]


def check_switches(switches: list[Switch], specs: list[dict[str, Any]]) -> None:
    """Refuse a switch that is no reading of any folder, or a value that is not one of its names."""
    known: dict[str, set[Any]] = {}
    new_run: set[str] = set()
    for spec in specs:
        for field, entry in benchmark_readings(spec).items():
            if not entry["rescore"]:
                new_run.add(field)
                continue
            known.setdefault(field, set()).update(entry["values"])
    for s in switches:
        if s.field in new_run and s.field not in known:
            raise ValueError(f"--switch {s.label()}: {s.field} changes what the model hears; "
                             "another value needs a new run, not a re-score")
        if s.field not in known:
            names = ", ".join(sorted(known)) or "none"
            raise ValueError(f"--switch {s.label()}: {s.field!r} is no reading of this run's benchmarks (readings: {names})")
        if s.value not in known[s.field]:
            raise ValueError(f"--switch {s.label()}: {s.value!r} is not a named value of {s.field} "
                             f"(one of {', '.join(map(str, sorted(known[s.field], key=str)))})")


def _mirror(bench_dir: Path, scratch: Path) -> Path:
    """A folder mirroring `bench_dir` whose files are symlinks to the run's files."""
    dest = scratch / bench_dir.parent.name / bench_dir.name
    shutil.copytree(bench_dir, dest, symlinks=True,
                    copy_function=lambda src, dst: os.symlink(os.path.abspath(src), dst))
    return dest


@dataclass(frozen=True)
class Rescore:
    """One re-score of a folder: its metrics by dotted path, and its records' outcomes by unit."""

    metrics: dict[str, dict[str, Any]]
    outcomes: dict[tuple[str, str, int], str]


def unit_outcomes(records: list[dict[str, Any]]) -> dict[tuple[str, str, int], str]:
    """Each record's outcome by unit: (item, the record's metric, its place among that item's
    records of that metric). Every family writes its records in a fixed order, so the same
    unit has the same key under every reading; a record without an outcome is no unit."""
    seen: Counter[tuple[str, str]] = Counter()
    out: dict[tuple[str, str, int], str] = {}
    for r in records:
        if not isinstance(r, dict) or r.get("outcome") is None:
            continue
        pair = (str(r.get("item")), str(r.get("metric", "")))
        out[(*pair, seen[pair])] = str(r["outcome"])
        seen[pair] += 1
    return out


NO_UNIT = "(no unit)"


def outcome_moves(base: dict[tuple[str, str, int], str], alt: dict[tuple[str, str, int], str]) -> list[dict[str, Any]]:
    """Units whose outcome an alternative changes: per record metric, from -> to with counts.

    This is where a move into a category without a metric of its own shows (a unit
    moving from an outcome with a rate to one without lowers one rate, raises none); a unit
    only one side has moves from or to "(no unit)"."""
    moves: Counter[tuple[str, str, str]] = Counter()
    for key in sorted(set(base) | set(alt)):
        a, b = base.get(key, NO_UNIT), alt.get(key, NO_UNIT)
        if a != b:
            moves[(key[1], a, b)] += 1
    return [{"unit": unit, "from": a, "to": b, "count": n} for (unit, a, b), n in sorted(moves.items())]


def format_moves(moves: list[dict[str, Any]]) -> str:
    """`start: fresh -> miss 2, ...` (what the command prints), or "no unit moves"."""
    if not moves:
        return "no unit moves"
    return ", ".join(f"{m['unit'] + ': ' if m['unit'] else ''}{m['from']} -> {m['to']} {m['count']}" for m in moves)


def _rescore(bench_dir: Path, spec: dict[str, Any], scratch: Path, family: Any) -> Rescore | None:
    folder = _mirror(bench_dir, scratch)
    try:
        res = family.score_dir(folder, spec, "replay")
        records = read_jsonl(folder / "records.jsonl") if res is not None and (folder / "records.jsonl").is_file() else []
    finally:
        shutil.rmtree(folder.parent, ignore_errors=True)
    return None if res is None else Rescore(flat_metrics(res), unit_outcomes(records))


def _delta(a: Any, b: Any) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isfinite(a) and math.isfinite(b):
        return float(b) - float(a)
    return None


def folder_rows(bench_dir: Path, switches: list[Switch], scratch: Path) -> Iterator[dict[str, Any]]:
    """Rows for one <model>/<benchmark> folder: per alternative and metric, baseline vs alternative."""
    from duplexeval.benchmarks import benchmark_for
    from duplexeval.runfolder.bench_folders import SPEC_SNAPSHOTS, bench_spec_for

    spec = bench_spec_for(bench_dir)
    todo = alternatives(spec, switches)
    if not todo:
        return
    snapshot = next((bench_dir / n for n in SPEC_SNAPSHOTS if (bench_dir / n).is_file()), None)
    family = benchmark_for(spec, snapshot or bench_dir)
    rescored = _rescore(bench_dir, spec, scratch, family)
    if rescored is None:
        return
    base = rescored.metrics
    model, bench = bench_dir.parent.name, bench_dir.name
    used = {f: e["value"] for f, e in benchmark_readings(spec).items()}
    for switch in todo:
        try:
            other = _rescore(bench_dir, with_reading(spec, switch.field, switch.value), scratch, family)
        except CacheMiss as exc:  # the alternative needs a judge call nobody has paid for: say so
            yield {"model": model, "benchmark": bench, "metric": None, "reading": switch.field,
                   "run_value": used.get(switch.field), "alternative": switch.value,
                   "error": f"needs judge verdicts the cache does not hold: {str(exc).splitlines()[0]}"}
            continue
        alt = other.metrics if other else {}
        # The units the alternative moves, on every row of this switch (a metric's row alone
        # cannot show where its units went when they land in a category without a row).
        moves = outcome_moves(rescored.outcomes, other.outcomes if other else {})
        for name in sorted(set(base) | set(alt)):
            b, a = base.get(name, {}), alt.get(name, {})
            yield {"model": model, "benchmark": bench, "metric": name, "reading": switch.field,
                   "run_value": used.get(switch.field), "alternative": switch.value,
                   "value": b.get("value"), "numerator": b.get("numerator"), "denominator": b.get("denominator"),
                   "alt_value": a.get("value"), "alt_numerator": a.get("numerator"),
                   "alt_denominator": a.get("denominator"), "delta": _delta(b.get("value"), a.get("value")),
                   "moves": moves}


def not_rescorable(specs: list[tuple[Path, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The readings a re-score cannot switch (`x-reading-rescore: false`), per benchmark and
    value used, with the models and why: another value changes what the model hears
    (e.g. how long the scheduler holds a turn), so it needs a new run."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for folder, spec in specs:
        for field, entry in benchmark_readings(spec).items():
            if entry["rescore"]:
                continue
            key = (folder.name, field, str(entry["value"]))
            row = out.setdefault(key, {"benchmark": folder.name, "reading": field, "run_value": entry["value"],
                                       "alternatives": [v for v in entry["values"] if v != entry["value"]],
                                       "models": [], "why": "changes what the model hears: another value needs a new "
                                                            "run, not a re-score"})
            row["models"].append(folder.parent.name)
    return [out[k] for k in sorted(out)]


def sensitivity(run_dir: Path, switches: list[Switch] | None = None,
                progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Re-score every folder of `run_dir` under each alternative reading; write sensitivity.json."""
    from duplexeval.io import atomic_write_json
    from duplexeval.runfolder.bench_folders import bench_dirs, bench_spec_for

    switches = list(switches or [])
    folders = bench_dirs(run_dir)
    if not folders:
        raise ValueError(f"{run_dir}: no <model>/<benchmark>/items folders to re-score")
    specs = [bench_spec_for(f) for f in folders]
    check_switches(switches, specs)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="duplexeval-sensitivity-") as tmp:
        for i, folder in enumerate(folders, 1):
            if progress:
                progress(f"[{i}/{len(folders)}] {folder.parent.name}/{folder.name}")
            rows.extend(folder_rows(folder, switches, Path(tmp)))
    out = {"schema": SCHEMA, "switches": [s.label() for s in switches], "rows": rows,
           "not_rescorable": [] if switches else not_rescorable(list(zip(folders, specs)))}
    atomic_write_json(run_dir / "sensitivity.json", out)
    return out
