"""`duplexeval image base`: the local base image, from debootstrap, without any registry.

`debootstrap --variant=minbase --include=<packages> SUITE ROOT MIRROR`, then the root
folder is imported as an image (`docker import`). The mirror is the one apt already uses
on this machine, so the base needs exactly the network the host's package installs need.
The image carries the hash of its recipe (ENV DUPLEXEVAL_BASE_ID): a rerun with the same
images/base/base.yaml does nothing, a changed recipe rebuilds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from duplexeval.containers.engine import MANAGED_LABEL
from duplexeval.io import sha256_json
from duplexeval.resources import resource

BASE_RECIPE = resource("images", "base", "base.yaml")
APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))
ID_ENV = "DUPLEXEVAL_BASE_ID"
# What the base must never carry into an image: package caches, apt lists, logs.
PRUNE = ("var/cache/apt/archives", "var/lib/apt/lists", "var/log", "usr/share/doc", "usr/share/man")


class BaseImageError(RuntimeError):
    """The base could not be built; the message says which step and what to do."""


@dataclass(frozen=True)
class BaseRecipe:
    tag: str
    suite: str
    variant: str
    packages: tuple[str, ...]

    @property
    def identity(self) -> str:
        return sha256_json({"suite": self.suite, "variant": self.variant, "packages": sorted(self.packages)})


def load_recipe(path: Path = BASE_RECIPE) -> BaseRecipe:
    try:
        data = yaml.safe_load(path.read_text("utf-8"))
        return BaseRecipe(str(data["tag"]), str(data["suite"]), str(data.get("variant", "minbase")),
                          tuple(str(p) for p in data["packages"]))
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise BaseImageError(f"{path}: not a base recipe (tag, suite, packages): {exc}") from None


def apt_mirror(sources: tuple[Path, ...] = APT_SOURCES) -> str:
    """The Debian archive apt uses here: the first non-security URI of a one-line or deb822 source."""
    files: list[Path] = []
    for p in sources:
        if p.is_dir():
            files += sorted(p.glob("*.sources")) + sorted(p.glob("*.list"))
        elif p.is_file():
            files.append(p)
    for f in files:
        text = f.read_text("utf-8", "replace")
        uris = re.findall(r"^URIs:\s*(\S+)", text, re.M) + re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.M)
        for uri in uris:
            if "security" not in uri and uri.startswith(("http://", "https://", "file:")):
                return uri
    raise BaseImageError("no Debian mirror found in apt's sources (/etc/apt/sources.list*); pass --mirror URL")


def existing_identity(client: Any, tag: str) -> str | None:
    import docker.errors

    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    for entry in image.attrs.get("Config", {}).get("Env") or []:
        if entry.startswith(ID_ENV + "="):
            return entry.split("=", 1)[1]
    return ""


def ensure_base_image(client: Any, recipe: BaseRecipe | None = None, *, mirror: str | None = None,
                      force: bool = False, progress: Callable[[str], None] = print) -> str:
    """Builds the base unless an image of the same recipe exists; returns the image id."""
    recipe = recipe or load_recipe()
    if not force and existing_identity(client, recipe.tag) == recipe.identity:
        progress(f"base image {recipe.tag} is up to date (recipe {recipe.identity[:12]}): nothing to do")
        return client.images.get(recipe.tag).id
    if os.geteuid() != 0:
        raise BaseImageError("debootstrap needs root: run `duplexeval image base` as root (or with sudo)")
    if shutil.which("debootstrap") is None:
        raise BaseImageError("debootstrap is not installed: run `scripts/docker-engine.sh install`")
    mirror = mirror or apt_mirror()
    with tempfile.TemporaryDirectory(prefix="dxe-base-", dir=os.environ.get("TMPDIR", "/var/tmp")) as tmp:
        root = Path(tmp) / "root"
        cmd = ["debootstrap", f"--variant={recipe.variant}", f"--include={','.join(recipe.packages)}",
               recipe.suite, str(root), mirror]
        progress(f"debootstrap {recipe.suite} ({', '.join(recipe.packages)}) from {mirror} ...")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
            raise BaseImageError(f"debootstrap failed (exit {proc.returncode}): {tail}")
        for rel in PRUNE:
            shutil.rmtree(root / rel, ignore_errors=True)
        tarball = Path(tmp) / "root.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(tarball), "."], check=True)
        progress(f"importing {recipe.tag} ({tarball.stat().st_size / 1e6:.0f} MB)")
        repo, _, tag = recipe.tag.rpartition(":")
        client.api.import_image_from_file(
            str(tarball), repository=repo, tag=tag,
            changes=[f"ENV {ID_ENV}={recipe.identity}", f"LABEL {MANAGED_LABEL}=1", "CMD [\"/bin/bash\"]"])
    image = client.images.get(recipe.tag)
    progress(f"base image {recipe.tag} built: {image.id}")
    return image.id
