"""Summary lines show every outcome (issue 28): 'success 0/10' hid 9 already_speaking rounds."""

from __future__ import annotations

from duplexeval.benchmarks import plugins
from duplexeval.commands.run import outcome_counts

SUCCESS = {"value": 0.0, "numerator": 0, "denominator": 10,
           "outcomes": {"already_speaking": 9, "no_response": 1}}


def test_the_run_summary_names_every_outcome_behind_a_rate():
    assert outcome_counts(SUCCESS) == " [already_speaking 9, no_response 1]"
    assert outcome_counts({"value": 1.0, "numerator": 1, "denominator": 1}) == ""


def test_score_prints_every_outcome_of_an_mtr_round():
    (line,) = plugins()["mtr-duplexbench"].result_lines("m/mtr-pause-handling", {"rounds": {"1": {"success": SUCCESS}}})
    assert line == "m/mtr-pause-handling round 1: success=0.0 (0/10) [already_speaking 9, no_response 1]"
