"""Read a run directory (docs/architecture.md) for reports and golden comparison.

Reports never re-score: they read results.json, records.jsonl and events.jsonl as the
scoring stage wrote them, so a report can be rebuilt from files alone and every number
in it traces back to a file in the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duplexeval.io import read_jsonl


@dataclass(frozen=True)
class ResultFile:
    """One results.json: a model x benchmark folder of the run."""

    path: Path
    data: dict[str, Any]

    @property
    def model(self) -> str:
        return str(self.data.get("model") or self.path.parent.parent.name)

    @property
    def benchmark(self) -> str:
        return str(self.data.get("benchmark") or self.path.parent.name)

    @property
    def condition(self) -> str | None:
        return self.data.get("condition")

    @property
    def folder(self) -> Path:
        return self.path.parent

    def metrics(self) -> dict[str, dict[str, Any]]:
        return self.data.get("metrics") or {}

    def rounds(self) -> dict[str, dict[str, Any]]:
        return self.data.get("rounds") or {}

    def spec_snapshot(self) -> dict[str, Any] | None:
        """The resolved benchmark spec the run wrote beside results.json (bench_folders.SPEC_SNAPSHOTS:
        what the run used, whatever the spec file says today); None when absent or unreadable."""
        from duplexeval.runfolder.bench_folders import SPEC_SNAPSHOTS

        try:
            data = json.loads((self.folder / SPEC_SNAPSHOTS[0]).read_text("utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None


@dataclass
class RunDir:
    root: Path
    manifest: dict[str, Any] | None
    summary: dict[str, Any] | None
    results: list[ResultFile] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        if self.manifest and self.manifest.get("run_id"):
            return str(self.manifest["run_id"])
        return self.root.name

    def relative(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None


def load_run(root: str | Path) -> RunDir:
    """Every results.json under the run, in a stable order (model, benchmark)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a run directory")
    results = []
    for path in sorted(root.glob("**/results.json")):
        data = _read_json(path)
        if isinstance(data, dict):
            results.append(ResultFile(path, data))
    results.sort(key=lambda r: (r.model, r.benchmark, str(r.path)))
    return RunDir(root=root, manifest=_read_json(root / "manifest.json"), summary=_read_json(root / "summary.json"),
                  results=results)


def find_results(run: RunDir, locator: dict[str, str]) -> list[ResultFile]:
    """results.json files whose model / benchmark / condition match the locator's."""
    out = []
    for r in run.results:
        if r.model != locator["model"]:
            continue
        if "benchmark" in locator and r.benchmark != locator["benchmark"]:
            continue
        if "condition" in locator and r.condition != locator["condition"]:
            continue
        out.append(r)
    return out


def read_field(result: ResultFile, locator: dict[str, str]) -> tuple[float | None, str]:
    """(number, note) for the locator inside one results.json; None when absent.

    A metric withheld from the report (e.g. Stop under 30 eligible events: value null,
    reported false) is read from its numerator / denominator, and the note says so: the
    golden check is about the pipeline, the 30-event rule is about what a paper prints.
    """
    fld = locator.get("field", "value")
    if fld.startswith("counts."):
        value = (result.data.get("counts") or {}).get(fld.split(".", 1)[1])
        return (float(value), "") if isinstance(value, (int, float)) else (None, f"no {fld}")
    table = result.rounds().get(locator["rounds"], {}) if "rounds" in locator else result.metrics()
    metric = table.get(locator.get("metric", ""))
    if not isinstance(metric, dict):
        where = f"rounds[{locator['rounds']}]" if "rounds" in locator else "metrics"
        return None, f"no {where}.{locator.get('metric')}"
    if fld.startswith("outcomes."):
        value = (metric.get("outcomes") or {}).get(fld.split(".", 1)[1])
        return (float(value), "") if isinstance(value, (int, float)) else (None, f"no {locator['metric']}.{fld}")
    value = metric.get(fld)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value), ""
    if fld == "value":
        num, den = metric.get("numerator"), metric.get("denominator")
        if isinstance(num, (int, float)) and isinstance(den, (int, float)) and den > 0:
            why = metric.get("note") or "value withheld"
            return num / den, f"{why}; compared on {num}/{den}"
        return None, metric.get("note") or "value is null"
    return None, f"no {fld}"


def item_dirs(result: ResultFile) -> list[Path]:
    items = result.folder / "items"
    return sorted(p for p in items.iterdir() if p.is_dir()) if items.is_dir() else []


def read_records(result: ResultFile) -> list[dict[str, Any]]:
    path = result.folder / "records.jsonl"
    return read_jsonl(path) if path.is_file() else []


def read_events(item_dir: Path) -> list[dict[str, Any]]:
    path = item_dir / "events.jsonl"
    return read_jsonl(path) if path.is_file() else []
