"""YAML to plain Python, remembering the line of every key and refusing duplicate keys.

PyYAML silently keeps the last of two equal keys and forgets where values came from;
both would make a spec error impossible to point at, so we walk the composed node tree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from duplexeval.specs.errors import SpecError, format_field

Locations = dict[tuple, int]


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps dates as strings (model snapshots are dates, not datetimes)."""


_Loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)

# libyaml composes the node tree ~8x faster (every process that loads the registry parses
# ~90 files: each CLI call, each executor worker). It builds the same nodes with the same
# marks; only its error texts differ, so a file libyaml rejects is parsed again by the pure
# Python loader, whose errors name the problem (and are what the tests pin).
_FastLoader = getattr(yaml, "CSafeLoader", None)


def _compose(text: str) -> yaml.Node | None:
    if _FastLoader is not None:
        fast = _FastLoader(text)
        try:
            return fast.get_single_node()
        except yaml.YAMLError:
            pass
        finally:
            fast.dispose()
    loader = _Loader(text)  # the reader checks characters here: a control character raises already
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def load_yaml(path: Path) -> tuple[Any, Locations]:
    """(data, locations) where locations maps a field path tuple to its 1-based line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(path, 1, "<file>", f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(path, 1, "<file>", f"not UTF-8 text: {exc.reason}") from None
    try:
        node = _compose(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        problem = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise SpecError(path, line, "<yaml>", f"invalid YAML: {problem}") from None
    except yaml.reader.ReaderError as exc:  # found by tests/test_fuzz_parsers.py
        line = text.count("\n", 0, exc.position) + 1
        raise SpecError(path, line, "<yaml>", f"invalid YAML: character {exc.character!r} is not allowed") from None
    except yaml.YAMLError as exc:
        raise SpecError(path, 1, "<yaml>", f"invalid YAML: {' '.join(str(exc).split())}") from None
    if node is None:
        raise SpecError(path, 1, "<root>", "empty file: a spec must be a mapping")
    locations: Locations = {}
    data = _to_python(node, (), path, locations, _Loader(""))
    return data, locations


def _to_python(node: yaml.Node, at: tuple, path: Path, locs: Locations, ctor: _Loader) -> Any:
    locs.setdefault(at, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise SpecError(path, key_node.start_mark.line + 1, format_field(at), "mapping keys must be plain scalars")
            key = ctor.construct_object(key_node)
            if key == "<<":
                raise SpecError(path, key_node.start_mark.line + 1, format_field(at), "YAML merge keys (<<) are not supported; use include:")
            if key in out:
                raise SpecError(path, key_node.start_mark.line + 1, format_field(at + (key,)),
                                f"duplicate key (first defined on line {locs[at + (key,)]})")
            locs[at + (key,)] = key_node.start_mark.line + 1
            out[key] = _to_python(value_node, at + (key,), path, locs, ctor)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_to_python(item, at + (i,), path, locs, ctor) for i, item in enumerate(node.value)]
    return ctor.construct_object(node, deep=True)
