"""A suite's `overrides`: applied to each benchmark spec, and validated by the same schema.

An override replaces part of a benchmark spec (its ASR, data block, scheduler keys, judge
roles, readings; the suite's `tts` for Duplex-MPE). Issue 39: `scheduler.max_wait_s: -5`
passed `validate`, and a misspelt scheduler key was merged in, ignored by the scheduler and
still printed by the report as applied. So there is one validation path: the benchmark as
the suite runs it (`apply_overrides`) is checked against the benchmark JSON Schema, bounds
and unknown keys (with did-you-mean) included, and every problem in a part the suite
replaced is reported at the suite's line. An override that reaches no benchmark of the
suite (a scheduler block in a suite without Duplex-MPE, a judge role no benchmark has) is
an error too: it would be reported as applied while changing nothing.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any

from duplexeval.io import sha256_json
from duplexeval.specs.errors import SpecError
from duplexeval.specs.loader import Spec, describe_schema_error, schema_errors
from duplexeval.specs.readings import apply_readings


def suite_overrides(suite: dict[str, Any]) -> dict[str, Any]:
    """The overrides a suite applies to each benchmark: its `overrides`, plus its `tts` (MPE voices)."""
    overrides = dict(suite.get("overrides", {}))
    if "tts" in suite:
        overrides["tts"] = suite["tts"]
    return overrides


def apply_overrides(bench: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`bench` as a suite with `overrides` runs it (a copy; `bench` is left alone)."""
    out = copy.deepcopy(bench)
    if "asr" in overrides:
        out["asr"] = copy.deepcopy(overrides["asr"])
    if "tts" in overrides and out["dimension"] == "mpe":
        # The voices of the scenes (suite-level `tts`; none: flite): rendering reads bench["tts"].
        out["tts"] = copy.deepcopy(overrides["tts"])
    data = overrides.get("data", {}).get(out["dimension"])
    if data is not None:
        # Keyed by dimension: the embedded MPE scenes must not replace MTR's dialogues.
        out["data"] = copy.deepcopy(data)
    if "scheduler" in overrides and "scheduler" in out:
        out["scheduler"] = {**out["scheduler"], **copy.deepcopy(overrides["scheduler"])}
    if "judges" in overrides:
        # Only roles the dimension has: an MPE judge override must not leak into MTR.
        out["judges"] = {role: overrides["judges"].get(role, judge) for role, judge in out["judges"].items()}
    if "readings" in overrides:
        out = apply_readings(out, overrides["readings"])
    return out


def _suite_field(at: tuple, dimension: str, overrides: dict[str, Any]) -> tuple | None:
    """Where in the suite a field of the merged benchmark came from (None: not from the suite)."""
    if not at:
        return None
    head = at[0]
    if head in ("asr", "scheduler") and head in overrides:
        return ("overrides", *at)
    if head == "data" and dimension in overrides.get("data", {}):
        return ("overrides", "data", dimension, *at[1:])
    return None  # `tts` is the suite's own field, checked by the suite schema


# (suite file, suite content, benchmark content) -> its problems: every command loads the
# registry, and a reload must stay cheap (tests/test_specs_load_cache.py).
_MEMO: dict[tuple[str, str, str], list[SpecError]] = {}


def override_problems(suite: Spec, bench: dict[str, Any]) -> list[SpecError]:
    """Schema problems (bounds, types, unknown keys) of `bench` as `suite` runs it, at the suite's lines.

    Only problems in the parts the suite replaced: the benchmark spec itself was validated
    on its own, at its own lines."""
    key = (str(suite.path), suite.sha256, sha256_json(bench))
    if key not in _MEMO:
        _MEMO[key] = _override_problems(suite, bench)
    return list(_MEMO[key])


def _override_problems(suite: Spec, bench: dict[str, Any]) -> list[SpecError]:
    overrides = suite_overrides(suite.data)
    try:
        merged = apply_overrides(bench, overrides)
    except (KeyError, TypeError, ValueError) as exc:  # a malformed block the schema reports elsewhere
        return [suite.error(("overrides",), f"cannot be applied to benchmark {bench.get('id')}: {exc}")]
    dimension = str(bench.get("dimension", ""))
    out = []
    for error in schema_errors("benchmark", merged):
        at, message = describe_schema_error(error)
        where = _suite_field(at, dimension, overrides)
        if where is None:
            continue
        out.append(suite.error(where, f"{message} (as benchmark {bench.get('id')} runs under this suite)"))
    return out


def unused_override_problems(suite: Spec, benches: list[dict[str, Any]],
                             known_roles: set[str]) -> tuple[list[SpecError], list[str]]:
    """(errors, warnings) for override blocks that reach nothing: a judge role no benchmark
    has anywhere (a misspelling: error, with did-you-mean), a scheduler block or judge role
    none of this suite's benchmarks has (warnings: a base file shared by several suites may
    carry blocks for benchmarks only some of them run)."""
    overrides = suite.data.get("overrides", {})
    errors, warnings = [], []
    if "scheduler" in overrides and not any("scheduler" in b for b in benches):
        warnings.append(str(suite.error(("overrides", "scheduler"), "no benchmark of this suite has a scheduler "
                                        "block (only Duplex-MPE's do): it changes nothing here")))
    roles = {role for b in benches for role in b.get("judges", {})}
    for role in overrides.get("judges", {}) or {}:
        if role in roles:
            continue
        if role not in known_roles:
            close = difflib.get_close_matches(role, sorted(known_roles), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (roles: {', '.join(sorted(known_roles))})"
            errors.append(suite.error(("overrides", "judges", role), f"no benchmark has the judge role {role!r}{hint}"))
    return errors, warnings
