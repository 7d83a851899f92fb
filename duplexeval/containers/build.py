"""`duplexeval image build MODEL`: a hermetic, reproducible build of a model's image.

The build context is staged, never the repository itself (its .venv, runs and caches
stay out):

    Dockerfile           images/<id>/Dockerfile (takes ARG BASE)
    install-wheels.sh    the install step every image shares (images/base/install-wheels.sh)
    images/<id>/         the image folder: shim, requirement files, README
    duplexeval/          what the model runs of the package: the protocol, the shims, the
                         reference agents for their image, and what those import
                         (image_sources.py); never the harness, so a harness edit leaves
                         every image's hash as it was
    wheels/              the wheelhouse (wheelhouse.py) + wheelhouse.json

and built with `network_mode="none"`: a Dockerfile that reaches for the network fails
here, as it would on an air-gapped GPU node. The image is labelled with the hash of its
context and its wheel list, so a rebuild of an unchanged context is skipped and an
auditor can read from the image exactly what went into it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from duplexeval.containers.engine import MANAGED_LABEL, MODEL_LABEL
from duplexeval.containers.image_sources import image_package_files
from duplexeval.containers.wheelhouse import MANIFEST, stage_wheelhouse
from duplexeval.io import sha256_file, sha256_json
from duplexeval.resources import package_dir, resource
from duplexeval.specs.modelspec import LOCAL_BASE_IMAGE, ModelSpec

CONTEXT_LABEL = "duplexeval.context"
WHEELS_LABEL = "duplexeval.wheelhouse"
BASE_LABEL = "duplexeval.base"
# Written once for every image: venv + wheelhouse install, run by each Dockerfile's second step.
INSTALL_SCRIPT = resource("images", "base", "install-wheels.sh")
# _bundle: an installed wheel's copy of specs/images/... (duplexeval.resources), not package source.
PACKAGE_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "_bundle")


class ImageBuildError(RuntimeError):
    """The build failed; the message carries the failing step's last lines of output."""


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    id: str
    context_sha256: str
    base: str
    skipped: bool


def image_folder(spec: ModelSpec) -> Path:
    folder = (spec.home / spec.build).resolve() if spec.build else None
    if folder is None or not (folder / "Dockerfile").is_file():
        raise ImageBuildError(f"model {spec.id}: launch.build {spec.build!r} has no Dockerfile"
                              + (f" ({folder}/Dockerfile)" if folder else ""))
    return folder


def stage_sources(spec: ModelSpec, dest: Path, package_root: Path | None = None) -> None:
    """Writes every file of the context but the wheelhouse into `dest` (what `tree_context_sha256` hashes).

    `package_root`: the duplexeval package to take the model's files from (default: this one)."""
    folder = image_folder(spec)
    package = package_root or package_dir()
    # A folder outside the repository (a model author's checkout) is staged as images/<name>.
    rel = folder.relative_to(spec.home) if folder.is_relative_to(spec.home) else Path("images") / folder.name
    shutil.copyfile(folder / "Dockerfile", dest / "Dockerfile")
    shutil.copyfile(INSTALL_SCRIPT, dest / INSTALL_SCRIPT.name)
    shutil.copytree(folder, dest / rel, ignore=PACKAGE_IGNORE, dirs_exist_ok=True)
    for path in image_package_files(package, folder):
        target = dest / "duplexeval" / path.relative_to(package)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def stage_build_context(spec: ModelSpec, dest: Path, progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Writes the context into `dest`; returns the wheelhouse manifest."""
    stage_sources(spec, dest)
    return stage_wheelhouse(image_folder(spec), dest / "wheels", progress=progress)


def context_sha256(ctx: Path, wheels: dict[str, Any], base_id: str) -> str:
    """The identity of a build: every staged file but the wheels (their hashes come from the manifest)."""
    files = {str(p.relative_to(ctx)): sha256_file(p) for p in sorted(ctx.rglob("*"))
             if p.is_file() and p.parent != ctx / "wheels"}
    return sha256_json({"files": files, "wheels": wheels.get("wheels", {}), "base": base_id})


def _labels(spec: ModelSpec, context: str, wheels: dict[str, Any], base: str) -> dict[str, str]:
    return {MANAGED_LABEL: "1", MODEL_LABEL: spec.id, CONTEXT_LABEL: context, BASE_LABEL: base,
            WHEELS_LABEL: json.dumps(wheels.get("wheels", {}), sort_keys=True, separators=(",", ":"))}


def _existing(client: Any, tag: str) -> Any | None:
    import docker.errors

    try:
        return client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def build_image(client: Any, spec: ModelSpec, *, base: str | None = None, force: bool = False,
                progress: Callable[[str], None] = print, log: Callable[[str], None] | None = None) -> BuiltImage:
    """Builds `spec.image` FROM `base` (default: the spec's launch.base_image) with no network."""
    if not spec.image:
        raise ImageBuildError(f"model {spec.id} has no launch.image to build")
    base = base or spec.base_image
    base_image = _existing(client, base)
    if base_image is None:
        hint = "run `duplexeval image base`" if base == LOCAL_BASE_IMAGE else f"load or pull {base} on this engine"
        raise ImageBuildError(f"model {spec.id}: base image {base} is not on this engine; {hint}")
    with tempfile.TemporaryDirectory(prefix="dxe-build-") as tmp:
        ctx = Path(tmp)
        wheels = stage_build_context(spec, ctx, progress)
        context = context_sha256(ctx, wheels, base_image.id)
        old = _existing(client, spec.image)
        if old is not None and not force and (old.labels or {}).get(CONTEXT_LABEL) == context:
            progress(f"{spec.image} is up to date (context {context[:12]}): nothing to build")
            return BuiltImage(spec.image, old.id, context, base, skipped=True)
        progress(f"building {spec.image} from {spec.build} on {base} (network disabled)")
        tail: list[str] = []
        for chunk in client.api.build(path=str(ctx), tag=spec.image, rm=True, forcerm=True, pull=False,
                                      network_mode="none", buildargs={"BASE": base},
                                      labels=_labels(spec, context, wheels, base), decode=True):
            if "error" in chunk:
                raise ImageBuildError(f"build of {spec.image} failed: {chunk['error'].strip()}; last output: "
                                      + " | ".join(tail[-6:]))
            line = (chunk.get("stream") or "").rstrip()
            if line:
                tail.append(line)
                if log is not None:
                    log(line)
                if line.startswith("Step "):
                    progress(f"  {line[:160]}")
    image = client.images.get(spec.image)
    progress(f"built {spec.image}: {image.id}")
    return BuiltImage(spec.image, image.id, context, base, skipped=False)


def tree_context_sha256(client: Any, spec: ModelSpec, labels: dict[str, str]) -> str | None:
    """The context hash a build of the tree as it is now would get, next to an image's `labels`.

    Cheap (no wheelhouse: it may need a download): the files are staged as a build stages
    them, the wheel list and the base are the image's own labels, the base's id is the
    engine's now. A changed requirement file still shows (it is in the image folder); a
    change of the project lock alone, with the image's requirements unchanged, does not.
    None when the base image is not on the engine (nothing to compare with).
    """
    base = _existing(client, labels.get(BASE_LABEL) or spec.base_image)
    if base is None:
        return None
    wheels = {"wheels": json.loads(labels.get(WHEELS_LABEL, "{}"))}
    with tempfile.TemporaryDirectory(prefix="dxe-fresh-") as tmp:
        stage_sources(spec, Path(tmp))
        return context_sha256(Path(tmp), wheels, base.id)


@dataclass(frozen=True)
class Freshness:
    """Whether an image is what `duplexeval image build` would make of the tree now."""

    stale: bool | None  # None: cannot be told (no context label: not built here; or its base is gone)
    message: str = ""   # for a stale image: what differs, and the command that rebuilds it


def freshness(client: Any, spec: ModelSpec, image: Any) -> Freshness:
    """Compares `image`'s context label with `tree_context_sha256` of the tree now."""
    labels = image.labels or {}
    built = labels.get(CONTEXT_LABEL)
    if not built or not spec.build:
        return Freshness(None)
    try:
        now = tree_context_sha256(client, spec, labels)
    except (ImageBuildError, OSError):
        return Freshness(None)  # the image folder is gone or unreadable: the run reports what it can
    if now is None:
        return Freshness(None)
    if now == built:
        return Freshness(False)
    return Freshness(True, f"image {spec.image} was built from another context ({built[:12]}) than the tree "
                           f"now gives ({now[:12]}): this run uses the old image; rebuild it with "
                           f"`duplexeval image build {spec.id}`")


def image_record(client: Any, spec: ModelSpec) -> dict[str, Any]:
    """What the run manifest records of a model's image: id, base, context and wheel hashes, staleness.

    `stale`: true when the tree now gives another context than the image's (`freshness`),
    false when the same, null when that cannot be told.
    """
    image = _existing(client, spec.image) if spec.image else None
    if image is None:
        return {"tag": spec.image, "present": False}
    labels = image.labels or {}
    return {"tag": spec.image, "present": True, "id": image.id, "base": labels.get(BASE_LABEL),
            "context_sha256": labels.get(CONTEXT_LABEL), "wheels": json.loads(labels.get(WHEELS_LABEL, "{}")),
            "stale": freshness(client, spec, image).stale}


__all__ = ["BuiltImage", "ImageBuildError", "build_image", "image_record", "stage_build_context", "stage_sources",
           "Freshness", "freshness", "tree_context_sha256", "MANIFEST"]
