"""Declarative specs: YAML files validated by JSON Schemas in specs/schema/.

Public surface: `Registry` (every spec of a tree, by kind and id), `load_spec` (one
file), `Spec`, and the errors, which always name file, line and field.
"""

from duplexeval.specs.errors import SpecError, SpecErrors, UnknownSpecError
from duplexeval.specs.index import SPECS_ENV, find_spec_file, known_spec_ids, spec_roots, specs_root
from duplexeval.specs.loader import KINDS, Spec, deep_merge, load_spec, repo_root
from duplexeval.specs.registry import Registry, default_registry

__all__ = [
    "KINDS", "SPECS_ENV", "Registry", "Spec", "SpecError", "SpecErrors", "UnknownSpecError",
    "deep_merge", "default_registry", "find_spec_file", "known_spec_ids", "load_spec", "repo_root",
    "spec_roots", "specs_root",
]
