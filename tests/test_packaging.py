"""duplexeval as an installed package, and a model author's spec folder outside the repository.

The wheel is built for real (`pip wheel` from a copy of the working tree, so the test
sees exactly the files git would commit and leaves no build/ behind), installed with
`pip install --target` into a temp folder, and driven from a working directory outside
the repository with PYTHONPATH pointing at the installed copy: any lookup that still
leans on the checkout or on the working directory fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from duplexeval.resources import bundle_root, project_dir
from duplexeval.specs import (
    SPECS_ENV,
    Registry,
    SpecErrors,
    find_spec_file,
    load_spec,
    spec_roots,
    specs_root,
)
from duplexeval.specs.modelspec import model_spec_from

REPO = Path(__file__).resolve().parents[1]
# A wheel over this size means something large slipped into the bundle (weights, tarballs).
MAX_WHEEL_BYTES = 2_000_000


def _working_tree_copy(dest: Path) -> Path:
    """The files git would commit (tracked + untracked-not-ignored), copied to `dest`."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes(src.read_bytes())
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """{wheel, site, cwd}: duplexeval built as a wheel and installed into `site`, outside the repo."""
    root = tmp_path_factory.mktemp("pkg")
    src = _working_tree_copy(root / "src")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(root / "dist"), str(src)], check=True, capture_output=True, cwd=root)
    (wheel,) = (root / "dist").glob("duplexeval-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(root / "site"),
                    str(wheel)], check=True, capture_output=True, cwd=root)
    cwd = root / "elsewhere"
    cwd.mkdir()
    return {"wheel": wheel, "site": root / "site", "cwd": cwd, "root": root}


def _cli(installed: dict, *args: str, specs: str | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in (SPECS_ENV, "PYTHONPATH")}
    env["PYTHONPATH"] = str(installed["site"])
    env["DUPLEXEVAL_CACHE"] = str(installed["root"] / "cache")
    if specs is not None:
        env[SPECS_ENV] = specs
    return subprocess.run([sys.executable, "-m", "duplexeval", *args], cwd=installed["cwd"], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_the_wheel_carries_specs_schemas_golden_embedded_data_images_and_the_lock(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    for name in ("duplexeval/_bundle/specs/schema/model.schema.json", "duplexeval/_bundle/specs/models/silent.yaml",
                 "duplexeval/_bundle/golden/embedded.yaml", "duplexeval/_bundle/requirements/lock.txt",
                 "duplexeval/_bundle/images/agents/Dockerfile", "duplexeval/_bundle/images/base/base.yaml",
                 "duplexeval/reports/templates/browser.js"):
        assert name in names, name
    assert any(n.startswith("duplexeval/_bundle/data/embedded/mpe/scenes/") for n in names)
    assert not [n for n in names if n.endswith((".pyc", "upstream.tar.gz")) or "__pycache__" in n]
    assert installed["wheel"].stat().st_size < MAX_WHEEL_BYTES


def test_the_installed_copy_is_imported_and_reads_its_own_bundle_from_outside_the_repo(installed):
    code = ("import duplexeval, duplexeval.resources as r, duplexeval.specs as s;"
            "print(duplexeval.__file__); print(r.bundle_root()); print(r.checkout_root()); print(s.specs_root())")
    env = dict(os.environ, PYTHONPATH=str(installed["site"]))
    env.pop(SPECS_ENV, None)
    out = subprocess.run([sys.executable, "-c", code], cwd=installed["cwd"], env=env, capture_output=True,
                         text=True, check=True).stdout.split("\n")
    site = installed["site"].resolve()
    assert Path(out[0]).is_relative_to(site)
    assert Path(out[1]) == site / "duplexeval" / "_bundle"
    assert out[2] == "None"  # not a checkout: no git commit is claimed for it
    assert Path(out[3]) == site / "duplexeval" / "_bundle" / "specs"


def test_validate_and_ls_work_from_the_installed_package(installed):
    r = _cli(installed, "validate")
    assert r.returncode == 0, r.stderr
    n_models = len(list((REPO / "specs" / "models").glob("[!_]*.yaml")))
    assert r.stdout.startswith(f"ok: {n_models} models")
    r = _cli(installed, "ls", "models")
    assert r.returncode == 0 and "silent" in r.stdout


def test_a_one_item_embedded_mpe_run_of_silent_works_from_the_installed_package(installed):
    runs = installed["root"] / "runs"
    r = _cli(installed, "run", "--models", "silent", "--benchmarks", "mpe-explicit", "--limit", "1",
             "--runs-dir", str(runs), "--run-id", "pkg")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "items 1 ok, 0 error" in r.stdout
    assert (runs / "pkg" / "silent" / "mpe-explicit" / "results.json").is_file()
    assert not (installed["cwd"] / "runs").exists()  # --runs-dir honoured, nothing written beside the package


# --- a model author's own folder -------------------------------------------------------


def _author_folder(base: Path, model_id: str = "my-silent", *, build: str | None = None) -> Path:
    """<base>/specs/models/<id>.yaml + <base>/images/<id>/: the repository layout, outside the repo.

    The spec is the silent agent's, resolved (its include is a bundle file) and renamed;
    its command runs a script of the author's folder by a relative path, which must
    resolve against that folder, whatever the working directory.
    """
    data = load_spec(specs_root() / "models" / "silent.yaml").data
    data = dict(data, id=model_id, name="My silent model (author folder test)")
    data["launch"] = dict(data["launch"], build=build or f"images/{model_id}",
                          command=["{python}", f"images/{model_id}/serve.py", "--socket", "{socket}"])
    (base / "specs" / "models").mkdir(parents=True, exist_ok=True)
    (base / "specs" / "models" / f"{model_id}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    image = base / "images" / model_id
    image.mkdir(parents=True, exist_ok=True)
    (image / "Dockerfile").write_text((REPO / "images" / "agents" / "Dockerfile").read_text())
    (image / "serve.py").write_text("from duplexeval.agents.silent import main\n\nmain()\n")
    return base


def test_a_model_authors_folder_is_found_validated_and_passes_conformance(installed, tmp_path):
    author = _author_folder(tmp_path / "my-model-repo")
    specs = str(author / "specs")
    r = _cli(installed, "validate", specs=specs)
    assert r.returncode == 0, r.stderr
    r = _cli(installed, "ls", "models", specs=specs)
    assert "my-silent" in r.stdout and "silent" in r.stdout.replace("my-silent", "")
    r = _cli(installed, "conformance", "my-silent", specs=specs)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "my-silent: all checks passed" in r.stdout


def test_a_build_folder_resolves_against_the_authors_folder_not_the_bundle(tmp_path, monkeypatch):
    from duplexeval.containers.build import image_folder

    author = _author_folder(tmp_path / "repo")
    monkeypatch.setenv(SPECS_ENV, str(author / "specs"))
    spec = Registry.load().get("model", "my-silent")
    model = model_spec_from(spec)
    assert model.home == author.resolve()
    assert image_folder(model) == (author / "images" / "my-silent").resolve()
    assert model_spec_from(Registry.load().get("model", "silent")).home == bundle_root()


def test_a_missing_build_folder_in_an_authors_spec_names_the_spec_and_the_folder(tmp_path, monkeypatch):
    author = _author_folder(tmp_path / "repo", build="images/not-there")
    monkeypatch.setenv(SPECS_ENV, str(author / "specs"))
    with pytest.raises(SpecErrors) as exc:
        Registry.load()
    (error,) = exc.value.errors
    assert error.file == (author / "specs" / "models" / "my-silent.yaml").resolve()
    assert error.field == "launch.build" and str((author / "images" / "not-there").resolve()) in error.message


def test_an_id_that_clashes_with_the_bundle_is_an_error_naming_both_files(tmp_path, monkeypatch):
    author = _author_folder(tmp_path / "repo", model_id="silent")
    monkeypatch.setenv(SPECS_ENV, str(author / "specs"))
    mine, bundled = (author / "specs" / "models" / "silent.yaml").resolve(), specs_root() / "models" / "silent.yaml"
    with pytest.raises(SpecErrors) as exc:
        Registry.load()
    (error,) = exc.value.errors
    # Reported at the author's file (the one that would shadow), naming the bundle's.
    assert (error.file, error.field) == (mine, "id")
    assert f"duplicate model id 'silent' (also {bundled.resolve()})" in error.message
    with pytest.raises(SpecErrors) as exc:
        find_spec_file("models", "silent")  # what `conformance silent` looks up: the same error, not a pick
    (error,) = exc.value.errors
    assert error.file == mine and f"(also {bundled.resolve()})" in error.message


def test_the_clash_reaches_the_cli_as_one_clear_error(installed, tmp_path):
    author = _author_folder(tmp_path / "repo", model_id="silent")
    r = _cli(installed, "conformance", "silent", specs=str(author / "specs"), timeout=60)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    mine = os.path.relpath(author / "specs" / "models" / "silent.yaml", installed["cwd"])
    bundled = installed["site"].resolve() / "duplexeval" / "_bundle" / "specs" / "models" / "silent.yaml"
    assert f"{mine}:1: id: duplicate model id 'silent' (also {bundled})" in r.stderr


def test_several_folders_are_searched_in_order_then_the_bundle(tmp_path, monkeypatch):
    a, b = _author_folder(tmp_path / "a", "model-a"), _author_folder(tmp_path / "b", "model-b")
    monkeypatch.setenv(SPECS_ENV, os.pathsep.join([str(a / "specs"), "", str(b / "specs"), str(specs_root())]))
    assert spec_roots() == ((a / "specs").resolve(), (b / "specs").resolve(), specs_root().resolve())
    reg = Registry.load()
    assert {"model-a", "model-b", "silent"} <= set(reg.specs["model"])
    assert find_spec_file("models", "model-b") == b / "specs" / "models" / "model-b.yaml"


def test_a_specs_folder_that_does_not_exist_is_an_error_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(SPECS_ENV, str(tmp_path / "nope"))
    with pytest.raises(SpecErrors, match=rf"{SPECS_ENV}: '.*nope' is not a folder"):
        spec_roots()


def test_project_dir_is_the_folder_above_the_spec_tree(tmp_path):
    assert project_dir(tmp_path / "p" / "specs" / "models" / "x.yaml", "models") == tmp_path / "p"
    assert project_dir(tmp_path / "p" / "specs" / "models" / "sub" / "x.yaml", "models") == tmp_path / "p"
    assert project_dir(tmp_path / "loose" / "x.yaml", "models") == bundle_root()


STAGE = """
import sys
from pathlib import Path
from duplexeval.containers.build import stage_build_context
from duplexeval.specs.modelspec import load_model_spec
dest = Path(sys.argv[1])
stage_build_context(load_model_spec("my-silent"), dest, progress=lambda _: None)
print("\\n".join(sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())))
"""


def test_an_installed_copy_stages_an_authors_image_context_with_its_package_but_not_its_bundle(installed, tmp_path):
    """What `duplexeval image build my-silent` sends to the engine (no engine needed to stage it).

    The author's image folder has no requirements.txt, so the wheelhouse is empty and
    nothing is downloaded.
    """
    author = _author_folder(tmp_path / "repo")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(installed["site"]), DUPLEXEVAL_SPECS=str(author / "specs"),
               DUPLEXEVAL_WHEELHOUSE=str(tmp_path / "wheelhouse"))
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    files = subprocess.run([sys.executable, "-c", STAGE, str(ctx)], cwd=installed["cwd"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    assert {"Dockerfile", "images/my-silent/Dockerfile", "images/my-silent/serve.py",
            "duplexeval/protocol/__init__.py", "wheels/wheelhouse.json"} <= set(files)
    assert not [f for f in files if f.startswith("duplexeval/_bundle") or f.endswith(".pyc")]
