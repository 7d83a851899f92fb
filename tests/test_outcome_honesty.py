"""A failure never reads as a score (issue 25): a model whose every item fails at start.

`run` exits 4 after writing everything and names the error codes per job; the report
marks every cell that lost units "incomplete" with the count (HTML, LaTeX, export), Table 9
adds up to N with its error column, each MTR dimension shows its spec's headline metric,
and `score` exits 4 too. Real processes: the faulty agent over a Unix socket.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys

import pytest
from faulty_suite import faulty_specs


def duplexeval(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "duplexeval", *args], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("faulty")
    # The session's shared cache (conftest.py): the embedded dialogues' TTS is reused across tests.
    env = {**os.environ, "DUPLEXEVAL_SPECS": str(faulty_specs(root, benchmarks=("mpe-explicit", "mtr-safety"))),
           "DUPLEXEVAL_TRACEBACK_DIR": str(root / "tracebacks")}
    ran = duplexeval(["run", "--suite", "faulty", "--runs-dir", str(root / "runs"), "--run-id", "f"], env)
    return root / "runs" / "f", ran, env


def test_run_exits_4_after_writing_everything_with_error_counts_per_job(faulty_run):
    run, ran, _ = faulty_run
    assert ran.returncode == 4, ran.stdout + ran.stderr
    for job in ("faulty/mpe-explicit", "faulty/mtr-safety"):
        assert re.search(rf"errors: {job}: \d+ item\(s\) errored: CLOSED \d+", ran.stderr), ran.stderr
        assert (run / job / "results.json").is_file()
    assert json.loads((run / "manifest.json").read_text())["manifest_sha256"]  # sealed: written to the end
    assert "INCOMPLETE" in ran.stdout


def test_the_report_marks_every_affected_cell_and_table_9_adds_up(faulty_run):
    run, _, env = faulty_run
    made = duplexeval(["report", str(run), "--no-paper-arithmetic"], env)
    assert made.returncode == 0, made.stdout + made.stderr
    page = (run / "report.html").read_text()
    assert 'id="incomplete-banner"' in page
    table3 = page[page.index('id="mpe-table3"'):page.index("</table>", page.index('id="mpe-table3"'))]
    cells = re.findall(r'<td class="num">(.*?)</td>', table3)
    assert len(cells) == 4 and all("incomplete:" in c for c in cells), cells
    table9 = page[page.index('id="mpe-table9"'):page.index("</table>", page.index('id="mpe-table9"'))]
    fresh, already, miss, error, presence = re.findall(r'<td class="num">(.*?)</td>', table9)
    results = json.loads((run / "faulty" / "mpe-explicit" / "results.json").read_text())
    n = results["metrics"]["start"]["denominator"]
    assert int(fresh) + int(already) + int(miss) + int(error) == n and int(error) == n
    assert "incomplete:" in presence
    other = page[page.index('id="mtr-other"'):page.index("</section>", page.index('id="mtr-other"'))]
    assert "refusal:" in other and "error:" not in other  # the spec's headline, not the first name sorted
    tex = (run / "report.tex").read_text()
    assert "INCOMPLETE" in tex and tex.count("[incomplete:") >= 5


def test_export_carries_the_lost_units(faulty_run):
    run, _, env = faulty_run
    out = duplexeval(["export", str(run), "--format", "csv", "--out", "-"], env)
    rows = list(csv.DictReader(out.stdout.splitlines()))
    start = next(r for r in rows if r["metric"] == "start" and r["round"] == "all")
    assert int(start["lost"]) == int(start["denominator"]) > 0
    refusal = next(r for r in rows if r["metric"] == "refusal" and r["round"] == "all")
    assert int(refusal["lost"]) > 0


def test_score_exits_4_and_names_the_lost_items(faulty_run):
    run, _, env = faulty_run
    scored = duplexeval(["score", str(run)], env)
    assert scored.returncode == 4, scored.stdout + scored.stderr
    assert "errors: faulty/mpe-explicit" in scored.stderr
    assert duplexeval(["verify", str(run)], env).returncode == 0  # rescoring re-sealed the manifest


def test_reproduce_exits_4_when_its_comparisons_pass_but_items_errored(faulty_run):
    run, _, env = faulty_run
    done = duplexeval(["reproduce", "--suite", "faulty", "--runs-dir", str(run.parent), "--run-id", run.name], env)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "errors: faulty/mpe-explicit" in done.stderr and "every comparison within tolerance, but" in done.stderr
    assert (run / "report.html").is_file() and "INCOMPLETE" in (run / "report.html").read_text()
