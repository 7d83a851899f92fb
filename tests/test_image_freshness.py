"""A stale image is warned about: its context label against the hash the tree now gives.

`duplexeval.containers.build.freshness` stages the context's files as a build does (not
the wheelhouse: its wheel list and base tag are the image's labels, the base's id the
engine's now) and compares. The unit tests drive it with a minimal engine object (only
`images.get`); the `docker` tests build a real tiny image on the engine and edit its folder.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from duplexeval.containers.build import (
    BASE_LABEL,
    CONTEXT_LABEL,
    WHEELS_LABEL,
    context_sha256,
    freshness,
    image_record,
    stage_sources,
    tree_context_sha256,
)
from duplexeval.runner.backends import docker as docker_backend
from duplexeval.specs.modelspec import LOCAL_BASE_IMAGE, model_spec_from

TAG = "duplexeval/fresh-probe:test"
DOCKERFILE = "ARG BASE\nFROM ${BASE}\nCOPY images/fresh-probe/ /probe/\n"


def probe_spec(home: Path):
    """A model spec whose image folder is home/images/fresh-probe (a Dockerfile and one file)."""
    folder = home / "images" / "fresh-probe"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Dockerfile").write_text(DOCKERFILE)
    (folder / "shim.py").write_text("print('v1')\n")
    data = {"id": "fresh-probe", "launch": {"backend": "docker", "image": TAG, "build": "images/fresh-probe", "gpus": 0}}
    return replace(model_spec_from(data), home=home)


class Engine:
    """The one engine call the freshness check makes: `images.get(tag)` (ImageNotFound when absent)."""

    def __init__(self, images: dict[str, object]):
        self.images = SimpleNamespace(get=self._get)
        self._images = images

    def _get(self, tag: str) -> object:
        import docker.errors

        if tag not in self._images:
            raise docker.errors.ImageNotFound(tag)
        return self._images[tag]


def built_image(spec, base_id: str, wheels: dict[str, str], tmp: Path) -> SimpleNamespace:
    """An image as `build_image` labels it: the context hash of the tree as it is now."""
    ctx = tmp / "ctx"
    ctx.mkdir()
    stage_sources(spec, ctx)
    (ctx / "wheels").mkdir()
    (ctx / "wheels" / "wheelhouse.json").write_text("{}")  # in wheels/: not hashed, as in a build
    labels = {CONTEXT_LABEL: context_sha256(ctx, {"wheels": wheels}, base_id), BASE_LABEL: LOCAL_BASE_IMAGE,
              WHEELS_LABEL: json.dumps(wheels)}
    shutil.rmtree(ctx)
    return SimpleNamespace(id="sha256:probe", labels=labels)


@pytest.fixture
def probe(tmp_path):
    spec = probe_spec(tmp_path / "tree")
    base = SimpleNamespace(id="sha256:base1")
    image = built_image(spec, base.id, {"numpy-2.whl": "ab" * 32}, tmp_path)
    return spec, image, Engine({LOCAL_BASE_IMAGE: base, TAG: image})


def test_an_unchanged_tree_gives_the_images_own_context(probe):
    spec, image, engine = probe
    assert tree_context_sha256(engine, spec, image.labels) == image.labels[CONTEXT_LABEL]
    assert freshness(engine, spec, image).stale is False


def test_one_changed_byte_in_the_image_folder_makes_it_stale_and_names_the_build_command(probe):
    spec, image, engine = probe
    (spec.home / "images" / "fresh-probe" / "shim.py").write_text("print('v2')\n")
    check = freshness(engine, spec, image)
    assert check.stale is True
    assert "duplexeval image build fresh-probe" in check.message and TAG in check.message


def test_a_rebuilt_base_makes_it_stale(probe):
    spec, image, engine = probe
    engine._images[LOCAL_BASE_IMAGE] = SimpleNamespace(id="sha256:base2")
    assert freshness(engine, spec, image).stale is True


def test_the_wheel_list_is_the_images_own_label(probe):
    spec, image, engine = probe
    other = dict(image.labels, **{WHEELS_LABEL: json.dumps({"numpy-3.whl": "cd" * 32})})
    assert tree_context_sha256(engine, spec, other) != image.labels[CONTEXT_LABEL]


def test_without_a_context_label_or_a_base_it_cannot_be_told(probe):
    spec, image, engine = probe
    assert freshness(engine, spec, SimpleNamespace(id="x", labels={})).stale is None
    del engine._images[LOCAL_BASE_IMAGE]
    assert freshness(engine, spec, image).stale is None
    shutil.rmtree(spec.home / "images")  # no image folder: nothing to compare either
    assert freshness(engine, spec, image).stale is None


def test_the_manifest_record_says_stale(probe):
    spec, image, engine = probe
    assert image_record(engine, spec)["stale"] is False
    (spec.home / "images" / "fresh-probe" / "shim.py").write_text("print('v2')\n")
    assert image_record(engine, spec)["stale"] is True
    assert image_record(Engine({}), spec) == {"tag": TAG, "present": False}


def test_the_backend_warns_once_per_model_and_image(probe, monkeypatch):
    spec, image, engine = probe
    monkeypatch.setattr(docker_backend, "_CHECKED", {})
    (spec.home / "images" / "fresh-probe" / "shim.py").write_text("print('v2')\n")
    said: list[str] = []
    assert docker_backend.warn_if_stale(engine, spec, image, said.append) is True
    assert docker_backend.warn_if_stale(engine, spec, image, said.append) is True
    assert len(said) == 1 and said[0].startswith("warning: ") and "duplexeval image build fresh-probe" in said[0]


def test_a_fresh_image_is_not_warned_about(probe, monkeypatch):
    spec, image, engine = probe
    monkeypatch.setattr(docker_backend, "_CHECKED", {})
    said: list[str] = []
    assert docker_backend.warn_if_stale(engine, spec, image, said.append) is False
    assert said == []


@pytest.mark.docker
def test_a_real_image_is_fresh_until_its_folder_changes(docker_engine, tmp_path, monkeypatch, capsys):
    """build_image's own label against the check, on the engine; then the backend's start warns."""
    from duplexeval.containers.build import _existing, build_image

    if _existing(docker_engine, LOCAL_BASE_IMAGE) is None:
        pytest.skip(f"{LOCAL_BASE_IMAGE} is not on the engine (`duplexeval image base` makes it)")
    monkeypatch.setenv("DUPLEXEVAL_WHEELHOUSE", str(tmp_path / "wheelhouse"))  # no requirements: nothing to download
    spec = probe_spec(tmp_path / "tree")
    try:
        build_image(docker_engine, spec, progress=lambda _: None)
        image = docker_engine.images.get(TAG)
        assert freshness(docker_engine, spec, image).stale is False
        (spec.home / "images" / "fresh-probe" / "shim.py").write_text("print('v2')\n")
        assert image_record(docker_engine, spec)["stale"] is True
        monkeypatch.setattr(docker_backend, "_CHECKED", {})
        backend = docker_backend.DockerBackend(spec, client=docker_engine)
        monkeypatch.setattr(docker_backend.DockerBackend, "await_socket", lambda self, path: None)
        try:
            backend.start()  # the image's CMD-less container exits at once: only the warning matters here
        finally:
            backend.stop(grace_s=0)
        assert "warning: image duplexeval/fresh-probe:test was built from another context" in capsys.readouterr().err
    finally:
        if _existing(docker_engine, TAG) is not None:
            docker_engine.images.remove(TAG, force=True)
