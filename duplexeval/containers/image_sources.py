"""Which files of the package a model image carries: what the model runs, and nothing else.

A model image runs the protocol server and its shim (duplexeval/protocol, duplexeval/shims)
and, for the reference agents, duplexeval/agents; it never runs the harness (runs, reports,
benchmarks, commands). Copying the whole package made every harness edit change every
image's build hash, so every image read as stale (issue 40). The image carries instead the
import closure of its roots:

* duplexeval/protocol and duplexeval/shims, whole;
* the package of each `python -m duplexeval....` module its Dockerfile names, whole (the
  reference agents' specs pick a sibling module by their command);
* every `duplexeval` module the Python files of the image folder import (its shim);

and, transitively, every module those import (at any depth of a function, since a lazy
import runs too; `if TYPE_CHECKING:` blocks excepted: they never run), each package's
`__init__.py` on the way, and the data files beside each module (control.schema.json).
The build hash (build.context_sha256) covers exactly the staged files, so an edit outside
the closure leaves every image's hash as it was.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT_PACKAGES = ("duplexeval.protocol", "duplexeval.shims")
_MODULE_FLAG = re.compile(r"-m[\"',\s]+[\"']?(duplexeval(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
_SKIP_DIRS = {"__pycache__", "_bundle"}
# A module named in a string, as a lazy registry names it ("duplexeval.x.y:Class").
_NAMED_MODULE = re.compile(r"(duplexeval(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?::[A-Za-z_][A-Za-z0-9_.]*)?")
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_names(source: str, package: str | None = None) -> set[str]:
    """Dotted names a Python source imports: absolute imports (`from P import x` gives P and P.x),
    strings that name a module (`"duplexeval.x.y:Class"`, as duplexeval.lazy registries do)
    and, in the `__init__` of `package`, strings naming one of its modules (PEP 562 lazy exports)."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.Import):
                out.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                out.add(child.module)
                out.update(f"{child.module}.{a.name}" for a in child.names)
            elif isinstance(child, ast.Constant) and isinstance(child.value, str):
                if m := _NAMED_MODULE.fullmatch(child.value):
                    out.add(m.group(1))
                elif package is not None and _IDENTIFIER.fullmatch(child.value):
                    out.add(f"{package}.{child.value}")
            visit(child)

    visit(ast.parse(source))
    return out


def module_file(package_root: Path, name: str) -> Path | None:
    """The file of module `name` (duplexeval.x.y) under the folder holding the package; None when none."""
    parts = name.split(".")
    if parts[0] != package_root.name:
        return None
    base = package_root.parent.joinpath(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _package_modules(package_root: Path, name: str) -> set[Path]:
    folder = package_root.parent.joinpath(*name.split("."))
    return {p for p in folder.rglob("*.py") if not _SKIP_DIRS & set(p.parts)}


def image_roots(package_root: Path, image_folder: Path) -> set[Path]:
    """The files the closure starts from (the module docstring lists them)."""
    roots: set[Path] = set()
    for name in ROOT_PACKAGES:
        roots |= _package_modules(package_root, name)
    dockerfile = image_folder / "Dockerfile"
    text = dockerfile.read_text("utf-8") if dockerfile.is_file() else ""
    for name in _MODULE_FLAG.findall(text):
        parent = name.rsplit(".", 1)[0]
        roots |= _package_modules(package_root, parent) if parent != package_root.name else set()
        if (f := module_file(package_root, name)) is not None:
            roots.add(f)
    for script in sorted(image_folder.rglob("*.py")):
        for name in imported_names(script.read_text("utf-8")):
            if (f := module_file(package_root, name)) is not None:
                roots.add(f)
    return roots


def image_package_files(package_root: Path, image_folder: Path) -> list[Path]:
    """Every file of the package the image needs, sorted: the import closure of `image_roots`,
    the `__init__.py` of each package on the way, and the non-Python files beside each module."""
    todo = sorted(image_roots(package_root, image_folder))
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        rel = path.relative_to(package_root.parent)
        for i in range(1, len(rel.parts)):   # the __init__ of every package on the way
            init = package_root.parent.joinpath(*rel.parts[:i]) / "__init__.py"
            if init.is_file() and init not in seen:
                todo.append(init)
        package = ".".join(rel.parent.parts) if path.name == "__init__.py" else None
        for name in imported_names(path.read_text("utf-8"), package):
            if (f := module_file(package_root, name)) is not None and f not in seen:
                todo.append(f)
    data = {p for m in seen for p in m.parent.iterdir()
            if p.is_file() and p.suffix not in (".py", ".pyc") and not p.name.startswith(".")}
    return sorted(seen | data)
