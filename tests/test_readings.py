"""Readings: the rule choices a benchmark spec selects, found from the schema's `x-reading` marks."""

from __future__ import annotations

import copy

import pytest

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
    written = write_report(run, with_arithmetic=False)
    html = written["html"].read_text()
    section = html[html.index('id="readings"'):html.index('id="manifest"')]
    assert "silent, oracle" in section and "whole-reply" in section  # one row for the two that share
    assert HOSTILE_HTML not in section and "&lt;/script&gt;" in section
    tex = written["latex"].read_text()
    assert "Readings" in tex and r"\input{/etc/passwd}" not in tex
    assert r"metrics.answer.response\_end" in tex
