"""Readings: the rule choices a benchmark spec selects, found from the schema's `x-reading` marks."""

from __future__ import annotations

import copy

import pytest

from duplexeval.benchmarks import plugins
from duplexeval.specs import default_registry
from duplexeval.specs.loader import schema_for
from duplexeval.specs.readings import benchmark_readings, readings

# A hand-made schema with the shapes the real one uses: a $ref'd family definition applied
# through if/then, a reading with a default, one without, and a non-reading enum.
SCHEMA = {
    "type": "object",
    "properties": {"family": {"type": "string"}, "metrics": {"type": "object"}},
    "allOf": [
        {"if": {"properties": {"family": {"const": "a"}}},
         "then": {"properties": {"metrics": {"$ref": "#/$defs/a_metrics"}}}},
        {"if": {"properties": {"family": {"const": "b"}}},
         "then": {"properties": {"metrics": {"$ref": "#/$defs/b_metrics"}}}},
    ],
    "$defs": {
        "a_metrics": {"type": "object", "properties": {
            "window": {"type": "object", "properties": {
                "speech": {"enum": ["pooled", "per-segment"], "x-reading": True, "default": "pooled",
                           "x-reading-rescore": False},
                "unit": {"enum": ["s", "ms"]}}},
            "latency": {"$ref": "#/$defs/latency"}}},
        "b_metrics": {"type": "object", "properties": {
            "attribution": {"enum": ["literal", "forgive"], "x-reading": True}}},
        "latency": {"enum": ["successes", "clamped"], "x-reading": True, "default": "successes"},
    },
}


def test_present_readings_and_defaults_of_the_applicable_family_only():
    got = readings(SCHEMA, {"family": "a", "metrics": {"window": {"speech": "per-segment", "unit": "ms"}}})
    assert got == {
        "metrics.latency": {"value": "successes", "values": ["successes", "clamped"], "rescore": True, "default": True},
        "metrics.window.speech": {"value": "per-segment", "values": ["pooled", "per-segment"], "rescore": False},
    }
    # family b's reading has no default and is absent: nothing to list; a's are not b's
    assert readings(SCHEMA, {"family": "b", "metrics": {}}) == {}
    assert readings(SCHEMA, {"family": "b", "metrics": {"attribution": "forgive"}}) == {
        "metrics.attribution": {"value": "forgive", "values": ["literal", "forgive"], "rescore": True}}


def test_an_invalid_value_is_still_listed_as_what_the_spec_says():
    """Validity is the loader's job (it rejects the value by name); the collector only lists."""
    got = readings(SCHEMA, {"family": "a", "metrics": {"window": {"speech": "nonsense"}}})
    assert got["metrics.window.speech"]["value"] == "nonsense"


def test_every_reading_of_the_bundled_specs_is_a_named_value():
    """Each x-reading entry the bundled benchmark specs reach has an enum holding the value used."""
    registry = default_registry()
    seen = 0
    for spec in registry.all("benchmark"):
        for field, entry in benchmark_readings(spec.data).items():
            seen += 1
            assert entry["values"], f"{spec.id}: reading {field} has no named values (enum)"
            assert entry["value"] in entry["values"], (spec.id, field, entry)
    assert seen >= 1, "the bundled benchmark specs mark no reading"


@pytest.mark.parametrize("marked", [True, False])
def test_the_mark_decides(marked):
    schema = copy.deepcopy(SCHEMA)
    schema["$defs"]["b_metrics"]["properties"]["attribution"]["x-reading"] = marked
    got = readings(schema, {"family": "b", "metrics": {"attribution": "literal"}})
    assert bool(got) is marked


def test_the_real_schema_is_accepted():
    assert isinstance(benchmark_readings({"kind": "benchmark"}), dict)
    assert schema_for("benchmark")


def test_the_report_names_the_readings_of_the_manifest_escaped(tmp_path):
    """The manifest's readings reach both report formats, grouped per benchmark, escaped."""
    import json

    from report_fixture import HOSTILE_HTML, HOSTILE_TEX, make_run

    from duplexeval.reports.render import write_report

    run = make_run(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["jobs"] = [
        {"model": "silent", "benchmark": "mpe-explicit", "readings": {"metrics.answer.response_end": "whole-reply"}},
        {"model": "oracle", "benchmark": "mpe-explicit", "readings": {"metrics.answer.response_end": "whole-reply"}},
        {"model": "babbler", "benchmark": "mpe-explicit", "readings": {"metrics.answer.response_end": HOSTILE_HTML}},
        {"model": "silent", "benchmark": "mtr-pause-handling", "readings": {"metrics.window_speech": HOSTILE_TEX}},
    ]
    (run / "manifest.json").write_text(json.dumps(manifest))
    written = write_report(run, families=plugins(), with_arithmetic=False)
    html = written["html"].read_text()
    section = html[html.index('id="readings"'):html.index('id="manifest"')]
    assert "silent, oracle" in section and "whole-reply" in section  # one row for the two that share
    assert HOSTILE_HTML not in section and "&lt;/script&gt;" in section
    tex = written["latex"].read_text()
    assert "Readings" in tex and r"\input{/etc/passwd}" not in tex
    assert r"metrics.answer.response\_end" in tex


def _suite_file(tmp_path, readings_yaml: str):
    path = tmp_path / "suites" / "my-suite.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("kind: suite\nid: my-suite\ndescription: readings test\nclock: lockstep\ncache_mode: readwrite\nseed: 0\nruns:\n"
                    "  - models: [silent]\n    benchmarks: [mpe-explicit, mtr-instruction, mtr-quality]\n"
                    "overrides:\n  readings:\n" + readings_yaml)
    return path


def test_a_suite_selects_readings_per_benchmark_and_the_manifest_names_them(tmp_path):
    """A suite's overrides.readings reach each job's benchmark where they are its readings; a list
    gives one field different names per dimension."""
    from duplexeval.runfolder.plan import plan_suite
    from duplexeval.specs import Registry

    path = _suite_file(tmp_path, "    metrics.answer.response_end: episode\n"
                                 "    metrics.criterion: [correct-against-reference, relevance-to-user-turns]\n")
    registry = Registry.load(extra_files=[path])
    jobs = {j.benchmark.id: j for j in plan_suite(registry, "my-suite")}
    assert jobs["mpe-explicit"].bench["metrics"]["answer"]["response_end"] == "episode"
    assert "criterion" not in jobs["mpe-explicit"].bench["metrics"]
    assert jobs["mtr-instruction"].bench["metrics"]["criterion"] == "correct-against-reference"
    assert jobs["mtr-quality"].bench["metrics"]["criterion"] == "relevance-to-user-turns"
    assert "response_end" not in jobs["mtr-quality"].bench["metrics"].get("answer", {})
    from duplexeval.specs.readings import reading_values

    assert reading_values(jobs["mtr-quality"].bench)["metrics.criterion"] == "relevance-to-user-turns"


@pytest.mark.parametrize("line, message", [
    ("    metrics.answer.response_ends: episode\n", "is no reading of this suite's benchmarks"),
    ("    metrics.answer.response_end: whole\n", "'whole' is not a named value"),
    ("    metrics.criterion: [attempts-instruction, nonsense]\n", "'nonsense' is not a named value"),
])
def test_validate_refuses_a_reading_that_does_not_exist(tmp_path, line, message):
    from duplexeval.specs import Registry, SpecErrors

    path = _suite_file(tmp_path, line)
    with pytest.raises(SpecErrors) as caught:
        Registry.load(extra_files=[path])
    text = str(caught.value)
    assert message in text and "my-suite.yaml" in text and "overrides.readings." in text


def test_the_paper_suites_name_their_readings():
    registry = default_registry()
    for suite_id in ("paper-mpe", "paper-mtr"):
        chosen = registry.get("suite", suite_id).data["overrides"]["readings"]
        assert len(chosen) >= 4, suite_id


@pytest.mark.parametrize("suite_id", ["paper-mpe", "paper-mtr"])
def test_a_paper_suite_names_every_reading_of_its_benchmarks(suite_id):
    """Issue 36: the paper suites name the published value of every reading, so a default
    that changes can never change what a paper suite reproduces."""
    registry = default_registry()
    suite = registry.get("suite", suite_id).data
    named = set(suite["overrides"].get("readings", {}))
    named |= {f"scheduler.{k}" for k in suite["overrides"].get("scheduler", {})}   # MPE's scheduler block
    benches = {b for run in suite["runs"] for b in run["benchmarks"]}
    found = {f for b in benches for f in benchmark_readings(registry.get("benchmark", b).data)}
    assert found - named == set(), (suite_id, sorted(found - named))
