"""Paper arithmetic: the published numbers re-derived from the papers' own counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from duplexeval.benchmarks import plugins
from duplexeval.cli import cli
from duplexeval.reports.golden import golden_dir, load_golden
from duplexeval.reports.paper_arithmetic import (
    DOES_NOT_RECONCILE,
    REPRODUCED,
    mcnemar_exact_log10_p,
    mcnemar_exact_p,
    paper_arithmetic,
)


@pytest.fixture(scope="module")
def rows():
    return {r.cell_id: r for r in paper_arithmetic(plugins())}


def test_mcnemar_90_vs_78_gives_p_0_3961() -> None:
    assert round(mcnemar_exact_p(90, 78), 4) == 0.3961


def test_mcnemar_395_vs_430_gives_p_0_2365() -> None:
    assert round(mcnemar_exact_p(395, 430), 4) == 0.2365


def test_log_space_p_agrees_with_the_plain_p() -> None:
    import math

    assert mcnemar_exact_log10_p(90, 78) == pytest.approx(math.log10(mcnemar_exact_p(90, 78)), abs=1e-9)


def test_table16_p_values_reproduce(rows) -> None:
    for cell in ("mpe.t16.minicpm-o.p", "mpe.t16.voila.p"):
        assert rows[cell].status == REPRODUCED, rows[cell]


def test_stop_rates_reproduce_from_eligible_counts(rows) -> None:
    assert rows["mpe.t3.voila.explicit.stop"].got == pytest.approx(526 / 620)
    assert round(rows["mpe.t3.voila.explicit.stop"].got, 4) == 0.8484
    assert round(rows["mpe.t3.minicpm-o.explicit.stop"].got, 4) == 0.5964
    assert rows["mpe.t3.voila.explicit.stop"].status == REPRODUCED
    assert rows["mpe.t3.minicpm-o.explicit.stop"].status == REPRODUCED


def test_stop_yields_over_all_1911_n4_are_27_5_and_51_0_percent(rows) -> None:
    assert round(rows["mpe.derived.voila.yield-over-all-n4"].got, 1) == 27.5
    assert round(rows["mpe.derived.minicpm-o.yield-over-all-n4"].got, 1) == 51.0


def test_start_and_presence_reproduce_from_table9_counts(rows) -> None:
    assert rows["mpe.t9.freeze-omni.start"].got == 0.2525
    assert rows["mpe.t3.freeze-omni.explicit.presence"].got == 0.9955
    assert rows["mpe.t9.flm-audio.start"].got == pytest.approx(0.5380)
    assert all(rows[c].status == REPRODUCED for c in ("mpe.t9.freeze-omni.start", "mpe.t9.flm-audio.presence"))


def test_answer_reproduces_from_correct_over_presence(rows) -> None:
    assert round(rows["mpe.t3.minicpm-o.explicit.answer"].got, 4) == 0.4730
    assert rows["mpe.t3.flm-audio.explicit.answer"].status == REPRODUCED  # 2 / 1901 under the 0.0123 bound


def test_n4_counts_do_not_reconcile_and_say_why(rows) -> None:
    row = rows["mpe.a22.scenes-with-n4-after-t"]
    assert row.status == DOES_NOT_RECONCILE
    assert "968" in row.note and "1911" in row.note
    assert rows["mpe.a24.pairs-differ-beyond-t"].status == DOES_NOT_RECONCILE


def test_table7_turn_total_adds_up_with_1911_n4_events(rows) -> None:
    assert rows["mpe.t7.turns"].got == 26182


def test_spearman_is_reported_as_not_reproducible_not_skipped(rows) -> None:
    assert rows["mpe.s45.spearman-presence-start"].status == "not reproducible"


def test_nothing_fails_on_the_shipped_golden_files() -> None:
    failures = [r for r in paper_arithmetic(plugins()) if r.failed]
    assert failures == []


def test_paper_check_exits_0_and_prints_the_discrepancies() -> None:
    result = CliRunner().invoke(cli, ["paper-check"])
    assert result.exit_code == 0, result.output
    assert "does not reconcile" in result.output


def test_paper_check_exits_1_when_a_golden_count_is_edited(tmp_path: Path) -> None:
    text = (golden_dir() / "duplex-mpe.yaml").read_text(encoding="utf-8")
    marker = "  - id: mpe.t15.voila.yields\n"
    head, tail = text.split(marker)
    edited = tail.replace("    value: 526\n", "    value: 532\n", 1)  # 532/620 = 0.8581: 0.0097 off the printed 0.8484
    path = tmp_path / "duplex-mpe.yaml"
    path.write_text(head + marker + edited, encoding="utf-8")
    assert load_golden(path).value("mpe.t15.voila.yields") == 532
    result = CliRunner().invoke(cli, ["paper-check", "--golden", str(path)])
    assert result.exit_code == 1, result.output
    assert "out of tolerance" in result.output
