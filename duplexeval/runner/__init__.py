"""The runner: starts a model from its spec, plays a Stimulus to it over protocol v1, records.

Public surface (docs/runner.md):
- `Stimulus`, `FileStimulus`                   what is played (stimulus.py)
- `run_item(model_spec, stimulus, item_dir, clock)`      one session, one folder
- `run_items(model_spec, items, out_dir, clock)`         many, resumable, faults as `error`
- `load_model_spec(id)`, `model_spec_from(spec_or_dict)` the spec fields the runner reads
- `ModelFault` (an item's error), `ModelStartError` (becomes STARTUP `error` items that a resume redoes), `RunConfigMismatch` (resume refused)
"""

from duplexeval.runner.errors import ModelFault, ModelStartError, RunConfigMismatch
from duplexeval.runner.items import ItemResult, item_seed, run_item, run_items
from duplexeval.runner.stimulus import FileStimulus, Stimulus
from duplexeval.specs.modelspec import ModelSpec, load_model_spec, model_spec_from

__all__ = [
    "FileStimulus", "ItemResult", "ModelFault", "ModelSpec", "ModelStartError", "RunConfigMismatch", "Stimulus",
    "item_seed", "load_model_spec", "model_spec_from", "run_item", "run_items",
]
