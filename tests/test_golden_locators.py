"""Golden locators that `compare` checks against a run (issue 13, item 14): per-model
denominators, Table 10's empty-ASR windows, Table 16 pair counts and p values (and
§4.5's rho) from statistics.json, FLM-Audio's Answer as 2/1,901, MTR latencies."""

from __future__ import annotations

from pathlib import Path

from report_fixture import metric

from duplexeval.io import atomic_write_json
from duplexeval.reports.compare import DENOMINATOR, MISSING, OK, OUT, compare_run
from duplexeval.reports.golden import golden_dir, load_golden
from duplexeval.runfolder.run_dir import load_run

MPE = golden_dir() / "duplex-mpe.yaml"
MTR = golden_dir() / "mtr-duplexbench.yaml"


def voila_flm_run(tmp_path: Path, *, windows: int = 20360, pairs: int = 2000) -> Path:
    run = tmp_path / "run"
    atomic_write_json(run / "voila" / "mpe-explicit" / "results.json", {
        "v": 1, "benchmark": "mpe-explicit", "condition": "explicit",
        "metrics": {"start": metric(0, 2000), "shush": {**metric(17003, windows), "outcomes": {"unreadable_speech": 171}},
                    "stop": {**metric(526, 620), "n4_events": 1911}}})
    atomic_write_json(run / "flm-audio" / "mpe-explicit" / "results.json", {
        "v": 1, "benchmark": "mpe-explicit", "condition": "explicit", "metrics": {"answer": metric(2, 1901)}})
    atomic_write_json(run / "statistics.json", {
        "schema": "duplexeval.statistics/1",
        "mcnemar": [{"model": "voila", "first": "mpe-explicit", "second": "mpe-implicit", "metric": "presence",
                     "pairs": pairs, "first_only": 395, "second_only": 430, "p": 0.236461},
                    {"model": "voila", "first": "mpe-explicit", "second": "mpe-implicit", "metric": "start",
                     "pairs": pairs, "first_only": 1, "second_only": 2, "p": 1.0}],
        "spearman": {"entries": 10, "x": "presence", "y": "start", "rho": -0.430303, "p": 0.2},
        "entries": []})
    return run


def statuses(run: Path, golden: Path) -> dict[str, tuple[str, float | None]]:
    return {r.cell_id: (r.status, r.got) for r in compare_run(load_run(run), load_golden(golden))}


def test_table16_pair_counts_and_p_values_and_the_rank_correlation_are_read_from_statistics_json(tmp_path) -> None:
    s = statuses(voila_flm_run(tmp_path), MPE)
    assert s["mpe.t16.voila.explicit-only"] == (OK, 395.0) and s["mpe.t16.voila.implicit-only"] == (OK, 430.0)
    assert s["mpe.t16.voila.p"][0] == OK
    assert s["mpe.s45.spearman-presence-start"][0] == OK and s["mpe.s45.entries"] == (OK, 10.0)
    assert s["mpe.t16.minicpm-o.p"][0] == MISSING  # no MiniCPM-o entry in this run


def test_mcnemar_over_fewer_pairs_than_the_paper_is_a_denominator_mismatch(tmp_path) -> None:
    s = statuses(voila_flm_run(tmp_path, pairs=1900), MPE)
    assert s["mpe.t16.voila.p"][0] == DENOMINATOR


def test_a_run_without_statistics_json_lists_the_statistics_cells_missing(tmp_path) -> None:
    run = voila_flm_run(tmp_path)
    (run / "statistics.json").unlink()
    assert statuses(run, MPE)["mpe.s45.spearman-presence-start"][0] == MISSING


def test_voila_empty_asr_windows_and_per_model_denominators_are_checked(tmp_path) -> None:
    s = statuses(voila_flm_run(tmp_path), MPE)
    assert s["mpe.t10.voila.empty-asr-windows"] == (OK, 171.0)
    assert s["mpe.den.voila.explicit.t-turns"] == (OK, 2000.0)
    assert s["mpe.den.voila.explicit.silence-windows"] == (OK, 20360.0)
    assert s["mpe.den.voila.explicit.n4-events"] == (OK, 1911.0)
    short = statuses(voila_flm_run(tmp_path / "short", windows=20000), MPE)
    assert short["mpe.den.voila.explicit.silence-windows"][0] == OUT


def test_flm_audio_answer_is_stored_as_2_of_1901_not_only_as_a_bound(tmp_path) -> None:
    cell = load_golden(MPE)["mpe.s41.flm-audio.answer"]
    assert (cell.numerator, cell.denominator) == (2, 1901) and cell.value == round(2 / 1901, 6)
    s = statuses(voila_flm_run(tmp_path), MPE)
    assert s["mpe.s41.flm-audio.answer"][0] == OK and s["mpe.t3.flm-audio.explicit.answer"][0] == OK


def test_cells_printed_without_decimals_share_one_tolerance() -> None:
    g = load_golden(MTR)
    for cell in g.cells:
        if cell.decimals == 0 and cell.unit == "percent" and cell.value is not None:
            assert cell.tolerance == 0.5, cell.id
    for cid in ("mtr.main.cascaded.pause.r1", "mtr.main.cascaded.background.r1to10", "mtr.main.vocalnet.pause.r1"):
        assert (g[cid].decimals, g[cid].tolerance) == (0, 0.5)


def test_mtr_latencies_and_set_sizes_have_locators(tmp_path) -> None:
    run = tmp_path / "run"
    atomic_write_json(run / "moshi" / "mtr-smooth-turn-taking" / "results.json", {
        "benchmark": "mtr-smooth-turn-taking", "metrics": {},
        "rounds": {"1-10": {"latency_s": {"value": 0.74, "numerator": 74.0, "denominator": 100, "unit": "seconds"}}}})
    atomic_write_json(run / "moshi" / "mtr-safety" / "results.json", {
        "benchmark": "mtr-safety", "metrics": {"error": metric(0, 520)}})
    atomic_write_json(run / "moshi" / "mtr-instruction" / "results.json", {
        "benchmark": "mtr-instruction", "metrics": {"error": metric(0, 299)}})
    s = statuses(run, MTR)
    assert s["mtr.finding.moshi.latency.smooth"] == (OK, 0.74)
    assert s["mtr.den.moshi.safety"] == (OK, 520.0)
    assert s["mtr.den.moshi.instruction"][0] == OUT
