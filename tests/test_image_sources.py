"""Model images carry only what a model runs (duplexeval/containers/image_sources.py), and their
build hash covers only that: an edit of the harness (a report module) leaves every model
image's hash as it was; an edit of the protocol changes every one. No Docker engine needed:
the staging and the hash are what a build labels its image with."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from duplexeval.containers.build import context_sha256, stage_sources
from duplexeval.containers.image_sources import image_package_files, imported_names
from duplexeval.resources import package_dir
from duplexeval.specs import Registry
from duplexeval.specs.modelspec import load_model_spec

WHEELS = {"wheels": {"numpy-2.whl": "ab" * 32}}


def built_models() -> list:
    """One model spec per image folder (the specs that name a build)."""
    seen, out = set(), []
    for spec in Registry.load().all("model"):
        ms = load_model_spec(spec.id)
        if ms.build and ms.build not in seen and (ms.home / ms.build / "Dockerfile").is_file():
            seen.add(ms.build)
            out.append(ms)
    return out


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("pkg") / "duplexeval"
    shutil.copytree(package_dir(), dest, ignore=shutil.ignore_patterns("__pycache__", "_bundle"))
    return dest


def hashes(models: list, package: Path, tmp: Path) -> dict[str, str]:
    out = {}
    for spec in models:
        ctx = tmp / spec.id
        shutil.rmtree(ctx, ignore_errors=True)
        ctx.mkdir(parents=True)
        stage_sources(spec, ctx, package)
        out[spec.id] = context_sha256(ctx, WHEELS, "sha256:base")
    return out


def test_editing_a_report_module_leaves_every_model_image_hash_unchanged(package_copy, tmp_path):
    models = built_models()
    assert len(models) >= 8   # agents, cascaded-baseline, moshi and the GPU images
    before = hashes(models, package_copy, tmp_path / "a")
    render = package_copy / "reports" / "render.py"
    render.write_text(render.read_text() + "\n# an edit of the harness\n")
    for harness in ("runs/execute.py", "benchmarks/mpe/score.py", "commands/run.py"):
        (package_copy / harness).write_text((package_copy / harness).read_text() + "\n# edited\n")
    assert hashes(models, package_copy, tmp_path / "b") == before
    wire = package_copy / "protocol" / "wire.py"
    wire.write_text(wire.read_text() + "\n# an edit of the protocol\n")
    after = hashes(models, package_copy, tmp_path / "c")
    assert all(after[k] != before[k] for k in before)


def test_a_gpu_image_carries_the_protocol_and_shims_not_the_harness(tmp_path):
    spec = load_model_spec("moshi")
    stage_sources(spec, tmp_path)
    tops = {p.relative_to(tmp_path / "duplexeval").parts[0] for p in (tmp_path / "duplexeval").rglob("*") if p.is_file()}
    assert {"protocol", "shims", "__init__.py"} <= tops
    assert not tops & {"runs", "reports", "benchmarks", "commands", "cli.py", "runner", "executors"}
    assert (tmp_path / "duplexeval" / "protocol" / "control.schema.json").is_file()   # data beside a module
    lines = sum(len(p.read_text().splitlines()) for p in (tmp_path / "duplexeval").rglob("*.py"))
    assert lines < 5000


def test_the_agents_image_carries_every_agent_and_what_they_import(tmp_path):
    stage_sources(load_model_spec("silent"), tmp_path)
    pkg = tmp_path / "duplexeval"
    assert {p.stem for p in (pkg / "agents").glob("*.py")} == {p.stem for p in (package_dir() / "agents").glob("*.py")}
    # a backend named only in a lazy registry's string is carried too
    assert (pkg / "judges" / "asr_backends" / "faster_whisper_backend.py").is_file()
    assert not (pkg / "reports").exists() and not (pkg / "benchmarks").exists()


def test_imports_are_read_at_any_depth_but_not_under_type_checking():
    src = ("from typing import TYPE_CHECKING\nimport duplexeval.audio\n"
           "if TYPE_CHECKING:\n    from duplexeval.runs import execute\n"
           "def f():\n    from duplexeval.io import atomic_write_json\n"
           "REG = {'x': 'duplexeval.judges.vad:StreamingVAD'}\n")
    names = imported_names(src)
    assert {"duplexeval.audio", "duplexeval.io", "duplexeval.io.atomic_write_json", "duplexeval.judges.vad"} <= names
    assert "duplexeval.runs" not in names and "duplexeval.runs.execute" not in names


def test_a_lazy_export_of_a_package_init_is_followed(tmp_path):
    files = image_package_files(package_dir(), Path(package_dir().parent / "images" / "cascaded-baseline"))
    rel = {str(p.relative_to(package_dir())) for p in files}
    assert "judges/vad.py" in rel   # named only as "vad" in judges/__init__'s _EXPORTS


def test_the_staged_agents_package_runs_on_its_own(tmp_path):
    """Without Docker: the agents image's staged duplexeval/ alone (first on the path) imports every
    agent module and starts an agent's CLI, and nothing is taken from the full package."""
    import subprocess
    import sys

    stage_sources(load_model_spec("silent"), tmp_path)
    code = ("import importlib, pkgutil, sys\n"
            "import duplexeval, duplexeval.agents\n"
            "for m in pkgutil.iter_modules(duplexeval.agents.__path__):\n"
            "    importlib.import_module('duplexeval.agents.' + m.name)\n"
            "outside = [n for n, m in sys.modules.items() if n.startswith('duplexeval')\n"
            "           and getattr(m, '__file__', None) and not m.__file__.startswith(sys.argv[1])]\n"
            "assert outside == [], outside\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "HOME": str(tmp_path)}
    got = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert got.returncode == 0, got.stderr[-2000:]
    got = subprocess.run([sys.executable, "-m", "duplexeval.agents.silent", "--help"], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=300)
    assert got.returncode == 0 and "--socket" in got.stdout, got.stderr[-2000:]


def test_a_gpu_image_staged_package_imports_every_shim_on_its_own(tmp_path):
    """The same for a GPU image (voila: protocol, shims and upstream.py): every shim and protocol module
    imports from the staged copy alone (the models' own libraries are imported lazily)."""
    import subprocess
    import sys

    stage_sources(load_model_spec("voila"), tmp_path)
    code = ("import importlib, pkgutil, sys\n"
            "import duplexeval.protocol, duplexeval.shims, duplexeval.upstream\n"
            "for pkg in (duplexeval.protocol, duplexeval.shims):\n"
            "    for m in pkgutil.iter_modules(pkg.__path__):\n"
            "        importlib.import_module(pkg.__name__ + '.' + m.name)\n"
            "outside = [n for n, m in sys.modules.items() if n.startswith('duplexeval')\n"
            "           and getattr(m, '__file__', None) and not m.__file__.startswith(sys.argv[1])]\n"
            "assert outside == [], outside\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "HOME": str(tmp_path)}
    got = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert got.returncode == 0, got.stderr[-2000:]


def test_every_copy_source_of_every_dockerfile_is_in_its_staged_context(tmp_path):
    """A build's COPY steps find their sources in the reduced context (checked without an engine:
    `COPY a b dest` names sources relative to the context)."""
    import re

    missing = []
    for spec in built_models():
        ctx = tmp_path / spec.id
        ctx.mkdir()
        stage_sources(spec, ctx)
        (ctx / "wheels").mkdir()   # the wheelhouse, staged separately by a build
        for line in (ctx / "Dockerfile").read_text().splitlines():
            if m := re.match(r"\s*COPY\s+(?:--\S+\s+)*(.+)", line):
                for src in m.group(1).split()[:-1]:
                    if not (ctx / src).exists():
                        missing.append(f"{spec.build}: {src}")
    assert missing == []
