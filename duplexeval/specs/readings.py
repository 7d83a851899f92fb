"""The readings a benchmark spec selects: rule choices the published numbers depend on.

Where a paper's text, its authors' code and a correction disagree (how speech is counted
in a window, how a late reply is attributed, how latency averages a silent round), each
choice is a *reading*: a spec field whose JSON-Schema entry carries `"x-reading": true`
and an `enum` of named values (docs/architecture.md, "Readings"). The schema is the one
place that says which fields are readings, so the manifest, the report and `validate`
never keep their own list: a family adds a reading by marking its schema entry.

The walk is jsonschema's own: an `x-reading` keyword is evaluated only where the schema
applies to the instance (after `$ref`, `if`/`then` and `allOf`), so a family's readings
are found only on that family's specs. A reading field left out of a spec is listed with
its schema `default`, marked as such, because a run used it all the same.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import jsonschema
from jsonschema import validators
from jsonschema.exceptions import ValidationError

from duplexeval.specs.errors import format_field

KEYWORD = "x-reading"
# `"x-reading-rescore": false` marks a reading that changes what the model hears (e.g. how
# the scheduler holds a turn): another value needs a new run, so a re-score cannot show it.
RESCORE = "x-reading-rescore"


def _reading(validator: Any, marked: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    """Report the value at this place as a (non-)error the collector picks up by its keyword."""
    if marked:
        yield ValidationError("reading", validator=KEYWORD, validator_value=marked, instance=instance, schema=schema)


def _collector(root: dict[str, Any]) -> Any:
    """A validator class whose `properties` also reports absent readings with their default."""

    def properties(validator: Any, props: dict[str, Any], instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        for name, sub in props.items():
            if name in instance:
                yield from validator.descend(instance[name], sub, path=name, schema_path=name)
                continue
            resolved = _resolve(root, sub)
            if resolved.get(KEYWORD) and "default" in resolved:
                error = ValidationError("reading (default)", validator=KEYWORD, validator_value="default",
                                        instance=resolved["default"], schema=resolved)
                error.path.appendleft(name)
                yield error

    return validators.extend(jsonschema.Draft202012Validator, {KEYWORD: _reading, "properties": properties})


_COLLECTORS: dict[int, tuple[dict[str, Any], Any]] = {}


def _collector_for(schema: dict[str, Any]) -> Any:
    """The collector class of `schema`, made once per schema object (the loader caches schemas)."""
    entry = _COLLECTORS.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = _COLLECTORS[id(schema)] = (schema, _collector(schema))
    return entry[1]


def _resolve(root: dict[str, Any], sub: Any) -> dict[str, Any]:
    """A property's schema with a local `$ref` followed (the only kind the specs use)."""
    while isinstance(sub, dict) and isinstance(sub.get("$ref"), str) and sub["$ref"].startswith("#/"):
        node: Any = root
        for part in sub["$ref"][2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        sub = node
    return sub if isinstance(sub, dict) else {}


def readings(schema: dict[str, Any], data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every reading the spec `data` selects: dotted field -> {value, default?, values}.

    `values` are the schema's named alternatives; `rescore` says whether a finished run can
    be re-scored under another of them (`duplexeval sensitivity` switches only those);
    `default: true` marks a value the spec left to its schema default.
    """
    out: dict[str, dict[str, Any]] = {}
    for error in _collector_for(schema)(schema).iter_errors(data):
        if error.validator != KEYWORD:
            continue  # validity is the loader's business; here only readings are collected
        field = format_field(tuple(error.absolute_path))
        entry: dict[str, Any] = {"value": error.instance, "values": list(error.schema.get("enum", [])),
                                 "rescore": error.schema.get(RESCORE, True) is not False}
        if error.validator_value == "default":
            entry["default"] = True
        out[field] = entry
    return dict(sorted(out.items()))


def with_reading(spec: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    """A copy of `spec` with the dotted reading `field` set (intermediate mappings created)."""
    out = copy.deepcopy(spec)
    node = out
    parts = field.split(".")
    for part in parts[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = node[part] = {}
        node = nxt
    node[parts[-1]] = value
    return out


def apply_readings(bench: dict[str, Any], chosen: dict[str, Any]) -> dict[str, Any]:
    """`bench` with a suite's `overrides.readings` set where they are readings of this benchmark.

    A suite spans families (the embedded suite holds both papers), so a field that is no
    reading of this benchmark is simply not its business; `suite_reading_problems` makes
    sure each field is a reading of at least one of the suite's benchmarks. A value may be
    a list when one field name carries different names per dimension (MTR's
    `metrics.criterion`): each benchmark takes the listed value that is one of its names.
    """
    found = benchmark_readings(bench)
    for field, value in chosen.items():
        if field not in found:
            continue
        fitting = [v for v in _as_list(value) if v in found[field]["values"]]
        if fitting:
            bench = with_reading(bench, field, fitting[0])
    return bench


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def suite_reading_problems(chosen: dict[str, Any], benches: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(field, why) for each suite reading that is no reading of its benchmarks, or no named value."""
    known: dict[str, list[Any]] = {}
    for bench in benches:
        for field, entry in benchmark_readings(bench).items():
            known.setdefault(field, [])
            known[field] += [v for v in entry["values"] if v not in known[field]]
    problems = []
    for field, value in chosen.items():
        if field not in known:
            names = ", ".join(sorted(known)) or "none"
            problems.append((field, f"is no reading of this suite's benchmarks (readings: {names})"))
        else:
            for v in _as_list(value):
                if v not in known[field]:
                    problems.append((field, f"{v!r} is not a named value (one of {', '.join(map(str, known[field]))})"))
    return problems


def benchmark_readings(bench: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The readings of one resolved benchmark spec (after a suite's overrides).

    Memoised by content: `validate` and every spec load check each suite's readings
    against its benchmarks, and a schema walk per benchmark would double a reload's cost.
    """
    from duplexeval.io import sha256_json
    from duplexeval.specs.loader import schema_for

    key = sha256_json(bench)
    if key not in _MEMO:
        _MEMO[key] = readings(schema_for("benchmark"), bench)
    return copy.deepcopy(_MEMO[key])


_MEMO: dict[str, dict[str, dict[str, Any]]] = {}


def reading_values(bench: dict[str, Any]) -> dict[str, Any]:
    """Just field -> value: what a manifest job records and a report lists."""
    return {field: entry["value"] for field, entry in benchmark_readings(bench).items()}


def readings_by_benchmark(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The manifest's readings as report rows: one per benchmark and distinct set of readings.

    Jobs of one benchmark usually share their readings; a suite override can change them
    for one model, and then that model gets a row of its own.
    """
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for job in manifest.get("jobs") or []:
        chosen = job.get("readings")
        if not isinstance(chosen, dict) or not chosen:
            continue
        key = (str(job.get("benchmark")), repr(sorted(chosen.items())))
        row = groups.setdefault(key, {"benchmark": key[0], "models": [], "readings": dict(sorted(chosen.items()))})
        row["models"].append(str(job.get("model")))
    return [groups[k] for k in sorted(groups)]
