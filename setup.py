"""Build hook: ship the bundle's non-Python files inside the wheel, as duplexeval/_bundle/.

What goes in is declared in pyproject.toml, `[tool.duplexeval.bundle]` (folders and files
copied with their layout, minus `exclude` globs); duplexeval.resources finds them there
at run time. An editable install reads the checkout itself and copies nothing. All other
metadata lives in pyproject.toml.
"""

from __future__ import annotations

import fnmatch
import shutil
import tomllib
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
BUNDLE = Path("duplexeval") / "_bundle"


def bundle_files(root: Path) -> list[Path]:
    """Every file the bundle config names, relative to `root`; a named path that is missing is an error."""
    try:
        config = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["tool"]["duplexeval"]["bundle"]
    except KeyError:
        raise SystemExit("pyproject.toml: [tool.duplexeval.bundle] is missing (include = [...])") from None
    exclude = config.get("exclude", [])
    out: list[Path] = []
    for entry in config["include"]:
        src = root / entry
        if not src.exists():
            raise SystemExit(f"pyproject.toml [tool.duplexeval.bundle] include: {entry!r} does not exist under {root}")
        for path in [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file()):
            rel = path.relative_to(root)
            if not any(fnmatch.fnmatch(rel.as_posix(), pattern) for pattern in exclude):
                out.append(rel)
    return out


class BuildPyWithBundle(build_py):
    """build_py, then the bundle copied into the build tree (the wheel packs that tree)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = Path(self.build_lib) / BUNDLE
        shutil.rmtree(dest, ignore_errors=True)  # a stale build/ must not ship deleted files
        for rel in bundle_files(HERE):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(HERE / rel, dest / rel)


setup(cmdclass={"build_py": BuildPyWithBundle})
