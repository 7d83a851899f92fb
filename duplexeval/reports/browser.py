"""The report's item browser: every scored record of the run, filterable, with its item's
timeline and recording.

The data is one JSON block inside report.html; the recording is linked by its path
relative to the run folder (the report sits in the run folder), so the HTML stays small
and works from file:// with no server. The one script is fixed text (templates/browser.js)
allowed by its sha256 in the page's Content-Security-Policy: a script planted in a
transcript is escaped by the JSON encoding and, even if it were not, would not run.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any, Callable

from markupsafe import Markup

from duplexeval.reports import charts
from duplexeval.reports.sections import Families, FamilyReport, family_of
from duplexeval.runfolder.run_dir import ResultFile, RunDir, item_dirs, read_events, read_records

SCRIPT = (Path(__file__).parent / "templates" / "browser.js").read_text(encoding="utf-8")
MAX_RECORDS = 20000          # per report; beyond this the browser says how many it left out
MAX_TEXT = 600               # characters of a transcript or reason kept per record


def script_hash(script: str = SCRIPT) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


def json_for_script(data: Any) -> Markup:
    """JSON that cannot end its <script type="application/json"> element early."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _clip(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " …"


def record_span(rec: dict[str, Any], item_window: list[float] | None = None,
                family: FamilyReport | None = None) -> list[float] | None:
    """A record's window in seconds: its `window` (specs/schema/records.schema.json), the family's
    own spelling (`Benchmark.record_span`), else the item's window its family gives
    (`Benchmark.report_item`), else its `anchor_s` (a zero-width mark)."""
    span = charts.span(rec)
    if span is None and family is not None:
        span = family.record_span(rec)
    if span is None and item_window:
        span = (float(item_window[0]), float(item_window[1]))
    if span is None and isinstance(rec.get("anchor_s"), (int, float)):
        span = (float(rec["anchor_s"]), float(rec["anchor_s"]))
    return [round(span[0], 3), round(span[1], 3)] if span else None


def _verdict(rec: dict[str, Any]) -> str:
    """pass / fail by the record's `passed`; `excluded` when it says null; `none` when the record
    carries no pass/fail of its own (a continuous metric's sample)."""
    if "passed" not in rec:
        return "none"
    verdict = charts.passed(rec)
    return "excluded" if verdict is None else ("pass" if verdict else "fail")


def _family_items(result: ResultFile, families: Families) -> Callable[[str], dict[str, Any] | None]:
    """The family's item view (`Benchmark.report_item`) for this result's folder; nothing when it has none."""
    plugin = families.get(family_of(result))
    if plugin is None:
        return lambda item_id: None
    return lambda item_id: plugin.report_item(result.folder, item_id)


def browser_data(run: RunDir, families: Families, max_records: int = MAX_RECORDS) -> dict[str, Any]:
    """Every scored record of the run (at most `max_records`) and each item's timeline;
    `families` (name -> plug-in) give the items their family draws itself."""
    records: list[dict[str, Any]] = []
    items: dict[str, dict[str, Any]] = {}
    total = 0
    for result in run.results:
        family_item = _family_items(result, families)
        family = families.get(family_of(result))
        recs = read_records(result)
        total += len(recs)
        dirs = {d.name: d for d in item_dirs(result)}
        by_item: dict[str, list[dict[str, Any]]] = {}
        for rec in recs:
            by_item.setdefault(str(rec.get("item", "")), []).append(rec)
        for item_id, mine in sorted(by_item.items()):
            key = f"{result.model}/{result.benchmark}/{item_id}"
            d = dirs.get(item_id)
            events = read_events(d) if d else []
            wav = d / "recording.wav" if d else None
            extra = family_item(item_id) or {}
            turns = charts.scene_turns(events) or extra.get("turns") or []
            roles = family.turn_roles if family is not None else {}
            items[key] = {
                "audio": run.relative(wav).replace("\\", "/") if wav is not None and wav.is_file() else None,
                "turns": [{"start": round(t["start"], 3), "end": round(t["end"], 3), "speaker": t.get("speaker"),
                           "label": t.get("label"), "role": roles.get(str(t.get("label")), "other"),
                           "text": _clip(t.get("text"))} for t in turns],
                "episodes": [[round(s, 3), round(e, 3)] for s, e in charts.speech_episodes(
                    events, mine, family.record_speech if family is not None else None)],
            }
            for rec in mine:
                if len(records) >= max_records:
                    continue
                records.append({
                    "model": result.model, "benchmark": result.benchmark, "item": item_id, "key": key,
                    "metric": str(rec.get("metric") or ""), "label": rec.get("label"),
                    "round": rec.get("round"), "outcome": rec.get("outcome"), "verdict": _verdict(rec),
                    "reason": _clip(rec.get("reason")), "transcript": _clip(rec.get("transcript")),
                    "judge": rec.get("judge") or rec.get("judge_id") or rec.get("judge_label"),
                    "judge_reason": _clip(rec.get("judge_reason")),
                    "span": record_span(rec, extra.get("window"), family),
                })
    for i, rec in enumerate(records):
        rec["i"] = i
    return {"records": records, "items": items, "total": total, "shown": len(records)}
