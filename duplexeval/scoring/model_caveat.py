"""The caveat a model's numbers must carry (model spec field `caveat`), for results.json.

Some model specs are not the system they are named after: `moshi-tiny` runs Moshi's real
code with random tiny weights. Their scores are real pipeline output and meaningless as
model scores, so the label travels with the numbers into results.json (key
`model_caveat`) and from there into every report (duplexeval/reports/render.py), instead
of living only in a spec file nobody opens next to a table.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

log = logging.getLogger(__name__)

# A snapshot of the model spec next to items/, like benchmark.json: it wins over the
# registry, so a re-score keeps the label the run had even if the spec changed since.
MODEL_SNAPSHOT = "model.json"


def model_caveat(bench_dir: str | Path) -> str | None:
    """The caveat of the model whose results live in `bench_dir` (<run>/<model>/<benchmark>).

    From `model.json` beside the items when present, else from the registry's spec named
    like the model folder; None for a model without one (or a folder that names no model).
    """
    bench_dir = Path(bench_dir)
    snapshot = bench_dir / MODEL_SNAPSHOT
    if snapshot.is_file():
        return json.loads(snapshot.read_text(encoding="utf-8")).get("caveat")
    from duplexeval.specs import SpecErrors, UnknownSpecError, find_spec_file, load_spec

    try:
        path = find_spec_file("models", bench_dir.parent.name)
        if path is None:
            return None
        return load_spec(path, expected_kind="model").data.get("caveat")
    except (SpecErrors, UnknownSpecError) as exc:
        # A broken spec must not stop scoring, but a dropped label must not be silent either.
        log.warning("model %s: spec unreadable, its caveat (if any) is not in results.json: %s", bench_dir.parent.name, exc)
        return None


def with_caveat(results: dict, bench_dir: str | Path) -> dict:
    """`results` with `model_caveat` added when the model has one (others are unchanged)."""
    caveat = model_caveat(bench_dir)
    if caveat:
        results["model_caveat"] = caveat
    return results
