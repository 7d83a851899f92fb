"""An MTR item in the report's item view (issue 28 item 2): its dialogue's user and assistant
turns up to its round, and its response window instead of a zero-width anchor."""

from __future__ import annotations

from duplexeval.benchmarks.mtr.report import item_view
from duplexeval.io import atomic_write_json
from duplexeval.reports.browser import record_span


def _round(n: int, user: tuple[float, float], assistant: tuple[float, float], window: tuple[float, float]) -> dict:
    return {"dialogue": "d1", "round": {"round": n, "user": {"start": user[0], "end": user[1], "text": f"q{n}"},
                                         "assistant": {"start": assistant[0], "end": assistant[1], "text": f"a{n}"}},
            "window": {"start_s": window[0], "end_s": window[1], "user_end_s": user[1]}}


def test_round_two_shows_both_rounds_turns_and_its_own_window(tmp_path):
    atomic_write_json(tmp_path / "rounds.json", {"d1.r01": _round(1, (0.5, 2.6), (3.1, 7.1), (0.5, 10.9)),
                                                 "d1.r02": _round(2, (7.9, 10.9), (11.4, 15.5), (7.9, 18.8)),
                                                 "d1.r03": _round(3, (16.0, 18.0), (19.0, 21.0), (16.0, 25.0))})
    view = item_view(tmp_path, "d1.r02")
    assert [(t["speaker"], t["label"]) for t in view["turns"]] == [("user", "U1"), ("assistant", "A1 (context)"),
                                                                    ("user", "U2")]  # A2 is the model's own reply
    assert view["window"] == [7.9, 18.8]
    # The record has no window of its own: the item's window, not the anchor's zero width.
    assert record_span({"metric": "success", "anchor_s": 10.9}, view["window"]) == [7.9, 18.8]
    assert record_span({"metric": "success", "anchor_s": 10.9}) == [10.9, 10.9]
    assert item_view(tmp_path, "d9.r01") is None


def test_a_family_spells_its_own_record_windows_and_the_report_asks_it():
    """reports/ knows only the shared spellings; Duplex-MPE's Stop window (its N4 turn) and
    Answer speech come through the plug-in's record_span / record_speech hooks."""
    from duplexeval.benchmarks.mpe.plugin import DuplexMpe
    from duplexeval.reports import charts

    stop = {"metric": "stop", "n4r_start": 4.25, "n4r_end": 6.5, "anchor_s": 4.25}
    assert record_span(stop) == [4.25, 4.25]                    # no family: only its anchor
    assert record_span(stop, family=DuplexMpe()) == [4.25, 6.5]
    assert record_span({"metric": "stop", "n4r_start": 3.0, "n4r_end": None}, family=DuplexMpe()) == [3.0, 3.0]
    answer = {"metric": "answer", "window": [2.0, 3.5]}
    assert charts.speech_episodes([], [answer]) == []
    assert charts.speech_episodes([], [answer], DuplexMpe().record_speech) == [(2.0, 3.5)]
    assert charts.speech_episodes([], [{"metric": "start", "window": [1.0, 2.0]}], DuplexMpe().record_speech) == []


def test_a_window_named_in_a_reason_is_the_mtr_plugins_reading_not_the_reports():
    from duplexeval.benchmarks.mtr.plugin import MtrDuplexBench

    rec = {"metric": "feature", "reason": "spoke in the pause window [2.50, 3.75]"}
    assert record_span(rec) is None
    assert record_span(rec, family=MtrDuplexBench()) == [2.5, 3.75]
