"""records.jsonl's shared fields (specs/schema/records.schema.json), checked where records are
written (benchmarks/bench_folder.py) and where a run is audited (`verify`).

Why a schema: the report and the item browser read records of every family; without one
they guessed spellings (`item_id`, `t0`/`t1`, an outcome's pass/fail from its word), and a
family's rename went unnoticed until a chart went blank. The schema names each shared field
once; a family's own fields sit beside them and the core never reads those. Which `outcome`
words a family writes is its own declaration (`Benchmark.outcomes`), handed in here as data.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable

OutcomeWords = frozenset[str] | None   # a family's outcome vocabulary; None: open (judge verdicts verbatim)


@lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    from duplexeval.specs.loader import schema_for

    return jsonschema.Draft202012Validator(schema_for("records"))


def record_problems(records: Iterable[Any], outcomes: OutcomeWords = None) -> list[str]:
    """Where records depart from the records schema, each 'line N: field: why' (empty: they follow it).

    With `outcomes` (the family's vocabulary), an `outcome` word outside it is a problem too."""
    out = []
    for n, rec in enumerate(records, 1):
        errors = sorted(_validator().iter_errors(rec), key=lambda e: list(map(str, e.absolute_path)))
        for e in errors:
            out.append(f"line {n}: {'.'.join(str(p) for p in e.absolute_path) or '<record>'}: {e.message}")
        word = rec.get("outcome") if isinstance(rec, dict) else None
        if outcomes is not None and isinstance(word, str) and word not in outcomes:
            out.append(f"line {n}: outcome: {word!r} is not one of its family's outcomes ({', '.join(sorted(outcomes))})")
    return out
