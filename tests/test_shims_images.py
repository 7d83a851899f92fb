"""Every system of the papers has an image folder with a hermetic Dockerfile and a shim (issue 12).

Static checks of what a GPU machine will build (none is built here): the Dockerfile takes
`ARG BASE`, installs offline from the staged wheelhouse, runs as 10001, never apt-gets; the
upstream manifests name the commits the shims' docstrings cite; the tarballs are ignored.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from duplexeval.specs import Registry
from duplexeval.specs.modelspec import REPO_ROOT

OURS = {"minicpm-o-4.5": None, "freeze-omni": "3e17af43b4fe64ba9609b4e1ba94c443c45101c0",
        "voila": "6ba63bf6d20cac0d88b78bb2158ddcb9f94aec26", "vocalnet": "bdf01d2d4edcf4c86c193e6b5170cf65a83adadf",
        "cascaded-baseline": None}


def paper_models() -> dict[str, dict]:
    registry = Registry.load()
    return {s.id: s.data for s in registry.all("model") if s.data.get("paper_rows")}


def test_all_seven_systems_of_the_papers_have_a_spec():
    assert set(paper_models()) >= {"moshi", "flm-audio", *OURS}


@pytest.mark.parametrize("model_id", sorted({"moshi", "flm-audio", *OURS}))
def test_the_image_folder_has_a_hermetic_dockerfile_and_a_shim(model_id):
    spec = paper_models()[model_id]
    folder = REPO_ROOT / spec["launch"]["build"]
    dockerfile = (folder / "Dockerfile").read_text()
    assert (folder / "shim.py").is_file()
    assert re.search(r"^ARG BASE", dockerfile, re.M) and "FROM ${BASE}" in dockerfile
    # The shared install step (images/base/install-wheels.sh) installs from the wheelhouse only.
    assert "RUN sh /tmp/wheels/install-wheels.sh" in dockerfile and "USER 10001:10001" in dockerfile
    assert "pip install" not in dockerfile, "the install step is written once, in images/base/install-wheels.sh"
    assert "apt-get" not in dockerfile.replace("no apt-get", "")


def test_the_shared_install_step_never_reaches_for_the_network():
    script = (REPO_ROOT / "images" / "base" / "install-wheels.sh").read_text()
    installs = [ln for ln in script.splitlines() if "pip install" in ln]
    assert len(installs) == 2 and all("--no-index" in ln and "--find-links" in ln for ln in installs)


@pytest.mark.parametrize("model_id", [m for m, commit in OURS.items() if commit])
def test_upstream_manifest_pins_the_commit_the_shim_cites(model_id):
    manifest = json.loads((REPO_ROOT / "images" / model_id / "upstream.json").read_text())
    commit = OURS[model_id]
    assert manifest["commit"] == commit and manifest["files"]
    module = model_id.replace("-", "_")
    shim_doc = (REPO_ROOT / "duplexeval" / "shims" / f"{module}.py").read_text()
    assert commit in shim_doc and commit in (REPO_ROOT / "images" / model_id / "shim.py").read_text()
    assert f"install --tarball images/{model_id}/upstream.tar.gz" in (REPO_ROOT / "images" / model_id / "Dockerfile").read_text()
    ignored = subprocess.run(["git", "check-ignore", "-q", f"images/{model_id}/upstream.tar.gz"], cwd=REPO_ROOT)
    assert ignored.returncode == 0, "the upstream tarball must be git-ignored"


def test_statuses_say_what_ran():
    specs = paper_models()
    for model_id in ("minicpm-o-4.5", "freeze-omni", "voila", "vocalnet"):
        assert specs[model_id]["status"] == "needs-gpu-image"
        assert "NOT built or run here" in specs[model_id]["status_note"]
        assert "stand-in" in specs[model_id]["status_note"]
    assert specs["cascaded-baseline"]["status"] == "runnable"
    assert specs["vocalnet"]["audio"]["out_rate"] == 24000 and "shim turn-taking" in specs["vocalnet"]["caveat"]
