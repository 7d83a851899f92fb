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

# Bounds of one YAML file (issue 25). Aliases share nodes in the composed tree, so a
# "billion laughs" file is small until it is expanded, and an anchor that contains its
# own alias never ends: both are refused while walking, by node count and by cycle. The
# largest bundled file (a golden file) has ~3,600 nodes and a depth under 10.
MAX_BYTES = 16 << 20
MAX_NODES = 100_000
MAX_DEPTH = 64


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


class _Walk:
    """What the node walk has spent: nodes expanded, and the nodes on the current path."""

    def __init__(self, path: Path) -> None:
        self.path, self.nodes = path, 0
        self.open: set[int] = set()

    def enter(self, node: yaml.Node, at: tuple) -> None:
        self.nodes += 1
        line = node.start_mark.line + 1
        if self.nodes > MAX_NODES:
            raise SpecError(self.path, line, format_field(at) if at else "<yaml>",
                            f"more than {MAX_NODES} values once aliases are expanded (an alias bomb?); "
                            "a spec, scene or golden file is far smaller")
        if len(at) > MAX_DEPTH:
            raise SpecError(self.path, line, format_field(at), f"nested deeper than {MAX_DEPTH} levels")
        if id(node) in self.open:
            raise SpecError(self.path, line, format_field(at) if at else "<yaml>",
                            "an alias refers to a value that contains it (a recursive anchor)")


def load_yaml(path: Path) -> tuple[Any, Locations]:
    """(data, locations) where locations maps a field path tuple to its 1-based line."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SpecError(path, 1, "<file>", f"cannot read: {exc.strerror or exc}") from None
    if size > MAX_BYTES:
        raise SpecError(path, 1, "<file>", f"{size} bytes: larger than {MAX_BYTES >> 20} MiB, not a spec-sized file")
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
    data = _to_python(node, (), path, locations, _Loader(""), _Walk(path))
    return data, locations


def _to_python(node: yaml.Node, at: tuple, path: Path, locs: Locations, ctor: _Loader, walk: _Walk) -> Any:
    walk.enter(node, at)
    locs.setdefault(at, node.start_mark.line + 1)
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
        walk.open.add(id(node))
        try:
            return _collection(node, at, path, locs, ctor, walk)
        finally:
            walk.open.discard(id(node))
    return ctor.construct_object(node, deep=True)


def _collection(node: yaml.Node, at: tuple, path: Path, locs: Locations, ctor: _Loader, walk: _Walk) -> Any:
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
            out[key] = _to_python(value_node, at + (key,), path, locs, ctor, walk)
        return out
    return [_to_python(item, at + (i,), path, locs, ctor, walk) for i, item in enumerate(node.value)]
