"""Issue 13 item 3: errored items leave no denominator; an incomplete result is no match.

Every planned unit (each T, each N1/N2/N3 window, each N4 event; each MTR round) of an
item whose verified status is not "ok" is one record with the outcome `error`: never a
pass, in every unconditional denominator (Start, presence, Shush), counted apart where the
denominator is conditional (Answer: presence; Stop: eligibility; issue 24). results.json says `complete: false`; `compare` refuses to
call such a result a match unless asked, and checks denominators against golden.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

from mpe_helpers import SPEC
from report_fixture import metric

from duplexeval.benchmarks.mpe.results import score_bench_dir
from duplexeval.benchmarks.mpe.scenes.loader import EMBEDDED_SCENES, load_scene
from duplexeval.benchmarks.mpe.scenes.model import conversation
from duplexeval.benchmarks.mtr.score import score_bench_dir as score_mtr_dir
from duplexeval.io import atomic_write_json
from duplexeval.reports.compare import DENOMINATOR, INCOMPLETE, OK, compare_run, failed
from duplexeval.reports.golden import load_golden
from duplexeval.runfolder.run_dir import load_run

SCENE = "bakery-pie"


def errored_item(item_dir: Path) -> None:
    item_dir.mkdir(parents=True)
    (item_dir / "events.jsonl").write_text("", encoding="utf-8")
    atomic_write_json(item_dir / "status.json", {"status": "error", "reason": "model crashed", "error_code": "CRASH"})


def mpe_spec() -> dict:
    spec = copy.deepcopy(SPEC)
    spec["data"] = {"source": "embedded", "path": str(EMBEDDED_SCENES)}
    return spec


def test_an_errored_scene_keeps_every_planned_unit_in_every_denominator(tmp_path: Path) -> None:
    bench = tmp_path / "crashy" / "mpe-explicit"
    errored_item(bench / "items" / SCENE)
    results = score_bench_dir(bench, mpe_spec(), judges={})
    labels = Counter(t.label for t in conversation(load_scene(EMBEDDED_SCENES / f"{SCENE}.yaml"), "explicit"))
    m = results["metrics"]
    assert m["start"]["denominator"] == labels["T"] and m["start"]["numerator"] == 0
    assert m["start"]["outcomes"]["error"] == labels["T"]
    assert m["presence"]["denominator"] == labels["T"]
    # Answer's and Stop's denominators are conditional (presence, eligibility): an errored
    # T or N4 event is not known to belong, so it is counted apart (issue 24).
    assert m["answer"]["denominator"] == 0 and m["answer"]["errored"] == labels["T"]
    assert m["shush"]["denominator"] == labels["N1"] + labels["N2"] + labels["N3"]
    assert m["shush"]["numerator"] == 0
    assert m["stop"]["n4_events"] == labels["N4Q"] and m["stop"]["eligible"] == 0
    assert m["stop"]["errored"] == labels["N4Q"] and m["stop"]["value"] is None
    assert results["complete"] is False
    assert results["incomplete"]["items"] == {"error": 1}
    assert results["incomplete"]["error_units"]["shush"] == m["shush"]["denominator"]


def test_error_units_never_pass_and_rescoring_is_byte_identical(tmp_path: Path) -> None:
    bench = tmp_path / "crashy" / "mpe-explicit"
    errored_item(bench / "items" / SCENE)
    score_bench_dir(bench, mpe_spec(), judges={})
    first = (bench / "results.json").read_bytes(), (bench / "records.jsonl").read_bytes()
    score_bench_dir(bench, mpe_spec(), judges={})
    assert first == ((bench / "results.json").read_bytes(), (bench / "records.jsonl").read_bytes())
    records = [json.loads(x) for x in first[1].decode().splitlines()]
    assert records and all(r["outcome"] == "error" and r["passed"] is False for r in records)


def test_an_errored_mtr_round_is_an_error_in_the_success_denominator(tmp_path: Path) -> None:
    bench_dir = tmp_path / "crashy" / "mtr-smooth-turn-taking"
    rnd = {"round": 1, "feature": "smooth", "user": {"start": 0.5, "end": 2.0, "text": "hi"}}
    atomic_write_json(bench_dir / "rounds.json", {"d.r01": {"dialogue": "d", "round": rnd}})
    errored_item(bench_dir / "items" / "d.r01")
    bench = {"id": "mtr-smooth-turn-taking", "dimension": "mtr-features", "features": ["smooth"], "metrics": {}}
    results = score_mtr_dir(bench_dir, bench, judges={})
    m = results["metrics"]
    assert m["success"] == {**m["success"], "numerator": 0, "denominator": 1}
    assert m["error"]["numerator"] == 1 and m["latency_s"]["denominator"] == 0
    assert results["complete"] is False


def paper_run(tmp_path: Path, start_den: int, complete: bool = True) -> Path:
    run = tmp_path / "paper-run"
    data = {"v": 1, "benchmark": "mpe-explicit", "condition": "explicit", "complete": complete,
            "metrics": {"start": {**metric(round(0.95 * start_den), start_den)}}}
    if not complete:
        data["incomplete"] = {"items": {"error": 100}}
    atomic_write_json(run / "minicpm-o-4.5" / "mpe-explicit" / "results.json", data)
    return run


def start_row(run: Path, **kw):
    rows = compare_run(load_run(run), load_golden(Path("golden/duplex-mpe.yaml").resolve()), **kw)
    return next(r for r in rows if r.cell_id == "mpe.t3.minicpm-o.explicit.start"), rows


def test_a_matching_rate_over_1900_of_2000_t_turns_is_a_denominator_mismatch(tmp_path: Path) -> None:
    row, rows = start_row(paper_run(tmp_path, 1900))
    assert row.status == DENOMINATOR and "2000" in row.note and failed(rows)
    ok, _ = start_row(paper_run(tmp_path / "full", 2000))
    assert ok.status == OK


def test_compare_refuses_an_incomplete_result_unless_asked(tmp_path: Path) -> None:
    run = paper_run(tmp_path, 2000, complete=False)
    row, rows = start_row(run)
    assert row.status == INCOMPLETE and failed(rows)
    allowed, _ = start_row(run, allow_incomplete=True)
    assert allowed.status == OK and "incomplete" in allowed.note
