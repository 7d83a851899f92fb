"""Where the bundle's files are: the checkout, or the copy shipped inside an installed wheel.

The harness reads more than Python: specs/ and their schemas, golden/, data/embedded/,
requirements/lock.txt and the images/ recipes. In a checkout they sit beside the
package; a wheel carries a copy of them in `duplexeval/_bundle/` with the same layout
(setup.py copies what `[tool.duplexeval.bundle]` in pyproject.toml lists). Every lookup
of such a file goes through `bundle_root()`, so nothing depends on the working directory
or on which of the two it is.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
BUNDLE_DIR = PACKAGE_DIR / "_bundle"
# A folder is the bundle when it holds the spec schemas: every command needs them.
MARKER = Path("specs") / "schema"


class BundleNotFound(RuntimeError):
    """Neither a wheel's `_bundle/` nor a checkout around the package: a broken install."""


@lru_cache(maxsize=None)
def bundle_root() -> Path:
    """The folder that holds specs/, golden/, data/embedded/, images/ and requirements/.

    The wheel's copy wins over a checkout: an installed duplexeval that happens to sit in
    a folder with a specs/ beside it must still read its own files.
    """
    for candidate in (BUNDLE_DIR, PACKAGE_DIR.parent):
        if (candidate / MARKER).is_dir():
            return candidate
    raise BundleNotFound(
        f"duplexeval's resources are missing: neither {BUNDLE_DIR / MARKER} (an installed wheel) nor "
        f"{PACKAGE_DIR.parent / MARKER} (a checkout) exists; reinstall with `pip install .` from a checkout")


def checkout_root() -> Path | None:
    """The git checkout the bundle is, or None for an installed wheel (whose version says what ran).

    A wheel installed into a venv that sits inside some other repository must not report
    that repository's commit as its own.
    """
    return None if bundle_root() == BUNDLE_DIR else bundle_root()


def resource(*parts: str) -> Path:
    """A path inside the bundle, e.g. resource("requirements", "lock.txt")."""
    return bundle_root().joinpath(*parts)


def package_dir() -> Path:
    """The duplexeval package's own source folder (what an image build copies in)."""
    return PACKAGE_DIR


def import_root() -> Path:
    """The folder to put on PYTHONPATH so that a child process imports this same duplexeval."""
    return PACKAGE_DIR.parent


def project_dir(spec_path: Path, kind_folder: str) -> Path:
    """The folder a spec's relative paths (`launch.build`, `data.path`, `golden`) resolve against.

    That is the folder above the spec tree it was found in: `<project>/specs/models/x.yaml`
    -> `<project>`, the same rule for the bundle, a checkout and a model author's own
    repository (which mirrors the layout: specs/models/<id>.yaml + images/<id>/). A file
    outside any `<kind_folder>/` folder (one passed to `validate` by path) resolves
    against the bundle.
    """
    spec_path = Path(spec_path).resolve()
    for parent in spec_path.parents:
        if parent.name == kind_folder:
            return parent.parent.parent
    return bundle_root()


__all__ = ["BUNDLE_DIR", "BundleNotFound", "bundle_root", "checkout_root", "import_root", "package_dir", "project_dir", "resource"]


CACHE_ENV = "DUPLEXEVAL_CACHE"


def cache_root() -> Path:
    """The harness's cache folder: `$DUPLEXEVAL_CACHE`, else ./.cache.

    Judges, ASR, VAD episodes, TTS, data sets and MTR's rendered dialogues each keep a
    subfolder of it. Computed here only, and at each call, so setting the variable (a test,
    `--cache`) moves every cache at once. Model weights and the image wheelhouse live
    elsewhere (`weights_root`, `wheelhouse_root`, below): they outlive checkouts.
    """
    return Path(os.environ.get(CACHE_ENV, Path.cwd() / ".cache"))


def data_root() -> Path:
    """Data set snapshots (both families'): `$DUPLEXEVAL_DATA_CACHE`, else `cache_root()/datasets`."""
    env = os.environ.get("DUPLEXEVAL_DATA_CACHE")
    return Path(env).expanduser() if env else cache_root() / "datasets"


def weights_root() -> Path:
    """Pinned model weights: `$DUPLEXEVAL_WEIGHTS_CACHE`, else ~/.cache/duplexeval/weights."""
    env = os.environ.get("DUPLEXEVAL_WEIGHTS_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "duplexeval" / "weights"


def wheelhouse_root() -> Path:
    """The images' downloaded wheels: `$DUPLEXEVAL_WHEELHOUSE`, else ~/.cache/duplexeval/wheelhouse."""
    return Path(os.environ.get("DUPLEXEVAL_WHEELHOUSE", Path.home() / ".cache" / "duplexeval" / "wheelhouse"))
