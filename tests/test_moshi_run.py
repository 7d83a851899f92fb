"""`duplexeval run --suite moshi-tiny`: Moshi's real code path through a scored run (issue 11).

Two embedded Duplex-MPE scenes and the embedded MTR dialogue-quality dialogue in fork
mode (teacher-forced history, one snapshot per round), scored with the embedded suite's
offline ASR and judges; every results.json and both reports carry the model's caveat.

One session per server (`max_sessions=1`): the spec's width of 8 is test_moshi_batch's and
test_unit_batch's subject. Here it would only cost CPU: the one MTR dialogue is one session
at a time, and at a width above 1 its teacher-forced rows step through the per-row depformer
wrapper (duplexeval/shims/moshi_rows.py). The module took 58 s of CPU (with its model server)
at width 8 and 52 s at width 1 (2026-12-05, the project's 2-core machine).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duplexeval.benchmarks import plugins
from duplexeval.commands.run import run_suite
from duplexeval.io import read_jsonl
from duplexeval.reports.render import write_report
from duplexeval.scoring.model_caveat import MODEL_SNAPSHOT, model_caveat

CAVEAT = "random tiny weights: the real Moshi code path, meaningless voice"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    run, outcomes = run_suite("moshi-tiny", models=None, benchmarks=None, run_id="moshi-tiny", runs_dir=root,
                              limit=None, clock=None, max_sessions=1)
    assert [(o.job.key, o.status) for o in outcomes] == [("moshi-tiny/mpe-explicit", "scored"),
                                                         ("moshi-tiny/mtr-quality", "scored")], \
        [(o.job.key, o.reason) for o in outcomes]
    write_report(run, families=plugins(), with_arithmetic=False)
    return run


def results(run_dir: Path, bench: str) -> dict:
    return json.loads((run_dir / "moshi-tiny" / bench / "results.json").read_text())


def test_two_mpe_scenes_are_run_and_scored_with_the_caveat(run_dir):
    r = results(run_dir, "mpe-explicit")
    assert r["items"]["ok"] == 2 and r["items"]["error"] == 0
    m = r["metrics"]
    assert m["start"]["denominator"] == 2 and sum(m["start"]["outcomes"].values()) == 2
    assert m["shush"]["denominator"] > 0  # every N1-N3 window of both scenes was judged
    assert r["model_caveat"] == CAVEAT
    for scene in ("bakery-pie", "beach-tide"):
        events = read_jsonl(run_dir / "moshi-tiny/mpe-explicit/items" / scene / "events.jsonl")
        start = next(e for e in events if e["type"] == "session_start")
        assert start["model"] == "moshi-tiny" and start["in_rate"] == 24000


def test_mtr_rounds_are_teacher_forced_through_forks_and_scored_with_the_caveat(run_dir):
    r = results(run_dir, "mtr-quality")
    assert r["context"] == {"mode": "fork", "teacher_forcing": True, "flag": None}
    rounds = json.loads((run_dir / "moshi-tiny/mtr-quality/rounds.json").read_text())
    assert r["items"]["ok"] == len(rounds) == r["metrics"]["score"]["denominator"] == 6
    assert r["model_caveat"] == CAVEAT
    later = sorted(rounds)[-1]
    events = read_jsonl(run_dir / "moshi-tiny/mtr-quality/items" / later / "events.jsonl")
    assert any(e["type"] == "session_start" and e.get("forked") for e in events)
    assert any(e["type"] == "session_end" and e["forked_at_frame"] > 0 for e in events)


def test_reports_carry_the_caveat(run_dir):
    html = (run_dir / "report.html").read_text()
    assert f"† moshi-tiny: {CAVEAT}" in html  # up front, on the first screen
    assert html.count(f"† {CAVEAT}") >= 2  # and beside the model's name in the tables
    tex = (run_dir / "report.tex").read_text()
    assert "\\subsection*{Model caveats}" in tex and CAVEAT in tex
    assert "moshi-tiny\\textsuperscript{\\dag} &" in tex


def test_caveat_comes_from_the_snapshot_then_the_spec(tmp_path):
    assert model_caveat(tmp_path / "moshi-tiny" / "mpe-explicit") == CAVEAT
    assert model_caveat(tmp_path / "silent" / "mpe-explicit") is None      # a spec without one
    assert model_caveat(tmp_path / "no-such-model" / "mpe-explicit") is None
    pinned = tmp_path / "moshi-tiny" / "mtr-safety"
    pinned.mkdir(parents=True)
    (pinned / MODEL_SNAPSHOT).write_text(json.dumps({"id": "moshi-tiny", "caveat": "as the run recorded it"}))
    assert model_caveat(pinned) == "as the run recorded it"
