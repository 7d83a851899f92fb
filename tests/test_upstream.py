"""duplexeval.upstream: what makes a user-placed upstream tarball trustworthy in an image build.

Tests build a small git repository here (a stand-in for an upstream project: none is
reachable), archive it both ways a user may (`git archive --prefix`, a GitHub-style
`<repo>-<sha>/` top folder), and check that install accepts exactly the pinned files,
names the file that differs, refuses links, and applies our patches without fuzz.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from duplexeval import upstream

ROOT = Path(__file__).resolve().parents[1]
FLM_PATCH = ROOT / "images" / "flm-audio" / "forward_audio.patch"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    src = tmp_path / "proj"
    (src / "pkg" / "models").mkdir(parents=True)
    (src / "pkg" / "models" / "lm.py").write_text("def step(x, y):\n    return x + y\n\n\ndef other():\n    pass\n")
    (src / "pkg" / "__init__.py").write_text("")
    (src / "client").mkdir()
    (src / "client" / "app.ts").write_text("console.log(1)\n")
    git(src, "init", "-q")
    git(src, "add", ".")
    git(src, "-c", "user.email=t@example.org", "-c", "user.name=t", "commit", "-q", "-m", "init")
    return src, git(src, "rev-parse", "HEAD")


def archive(src: Path, commit: str, prefix: str, out: Path) -> Path:
    subprocess.run(["git", "-C", str(src), "archive", "--format=tar.gz", f"--prefix={prefix}/", "-o", str(out), commit],
                   check=True)
    return out


@needs_git
@pytest.mark.parametrize("prefix", ["proj", "proj-0123abc"])
def test_install_takes_the_pinned_subfolder_of_either_tarball_form(repo, tmp_path, prefix):
    src, commit = repo
    manifest = upstream.manifest(src, commit, "pkg", "github:acme/proj")
    assert set(manifest["files"]) == {"__init__.py", "models/lm.py"} and manifest["commit"] == commit
    (tmp_path / "upstream.json").write_text(json.dumps(manifest))
    tarball = archive(src, commit, prefix, tmp_path / "upstream.tar.gz")
    record = upstream.install(tarball, tmp_path / "upstream.json", tmp_path / "dest")
    assert (tmp_path / "dest" / "models" / "lm.py").read_text().startswith("def step")
    assert not (tmp_path / "dest" / "client").exists()
    assert record["commit"] == commit and json.loads((tmp_path / "dest" / "UPSTREAM.json").read_text())["files"] == 2


@needs_git
def test_install_replaces_an_earlier_install_but_never_a_folder_it_did_not_write(repo, tmp_path):
    """Issue 39: no command deletes a non-empty folder it did not create (stdlib only: the same rule
    as duplexeval.cli_params.replace_guard)."""
    src, commit = repo
    (tmp_path / "upstream.json").write_text(json.dumps(upstream.manifest(src, commit, "pkg", "github:acme/proj")))
    tarball = archive(src, commit, "proj", tmp_path / "upstream.tar.gz")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep\n")
    with pytest.raises(upstream.UpstreamError, match="not empty and not an earlier install"):
        upstream.install(tarball, tmp_path / "upstream.json", mine)
    assert (mine / "notes.txt").read_text() == "keep\n" and not (mine / "UPSTREAM.json").exists()
    upstream.install(tarball, tmp_path / "upstream.json", tmp_path / "dest")
    (tmp_path / "dest" / "stray.txt").write_text("from the first install's era\n")
    upstream.install(tarball, tmp_path / "upstream.json", tmp_path / "dest")  # an earlier install: replaced
    assert not (tmp_path / "dest" / "stray.txt").exists() and (tmp_path / "dest" / "UPSTREAM.json").is_file()


@needs_git
def test_a_file_of_another_commit_is_named_and_the_build_stops(repo, tmp_path):
    src, commit = repo
    (tmp_path / "upstream.json").write_text(json.dumps(upstream.manifest(src, commit, "pkg", "github:acme/proj")))
    (src / "pkg" / "models" / "lm.py").write_text("def step(x, y):\n    return x - y\n")
    git(src, "-c", "user.email=t@example.org", "-c", "user.name=t", "commit", "-qam", "change")
    tarball = archive(src, "HEAD", "proj", tmp_path / "upstream.tar.gz")
    with pytest.raises(upstream.UpstreamError, match=r"models/lm.py differs from github:acme/proj@"):
        upstream.install(tarball, tmp_path / "upstream.json", tmp_path / "dest")
    assert not (tmp_path / "dest").exists()
    # and the command line says it in one line, exit 2
    code = upstream.main(["install", "--tarball", str(tarball), "--manifest", str(tmp_path / "upstream.json"),
                          "--dest", str(tmp_path / "dest")])
    assert code == 2


def test_links_in_the_tarball_are_refused(tmp_path):
    tarball = tmp_path / "evil.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        info = tarfile.TarInfo("proj/pkg/models/lm.py")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)
    (tmp_path / "upstream.json").write_text(json.dumps({"schema": upstream.MANIFEST_SCHEMA, "repo": "r", "commit": "c",
                                                        "under": "pkg", "files": {"models/lm.py": "0" * 64}}))
    with pytest.raises(upstream.UpstreamError, match="is a link"):
        upstream.install(tarball, tmp_path / "upstream.json", tmp_path / "dest")


def test_a_patch_applies_exactly_or_names_the_line_that_does_not_fit(tmp_path):
    (tmp_path / "pkg").mkdir()
    target = tmp_path / "pkg" / "lm.py"
    target.write_text("a\nb\nc\nd\n")
    patch = "--- a/pkg/lm.py\n+++ b/pkg/lm.py\n@@ -2,2 +2,2 @@\n-b\n+B\n c\n"
    assert upstream.apply_patch(tmp_path, patch, "ours.patch") == ["pkg/lm.py"]
    assert target.read_text() == "a\nB\nc\nd\n"
    with pytest.raises(upstream.UpstreamError, match=r"ours.patch: pkg/lm.py:2: expected 'b', found 'B'"):
        upstream.apply_patch(tmp_path, patch, "ours.patch")


def test_the_flm_audio_patch_fits_the_two_lines_it_documents(tmp_path):
    """Lines 943-947 of flmaudio/models/modeling_flmaudio.py at 41d768c9, as quoted in
    images/flm-audio/README.md, after 942 lines of stand-in text."""
    path = tmp_path / "flmaudio" / "models" / "modeling_flmaudio.py"
    path.parent.mkdir(parents=True)
    quoted = ("\n"
              "    def forward_audio(self, transformer_output_states, audio_input_ids, step, kv_cache):\n"
              "        return self.aud_output_layers(transformer_output_states, audio_input_ids, step, kv_cache)\n"
              "\n"
              "    def _get_initial_token(self) -> torch.Tensor:\n")
    path.write_text("".join(f"# line {i}\n" for i in range(1, 943)) + quoted)
    assert upstream.apply_patch(tmp_path, FLM_PATCH.read_text(), FLM_PATCH.name) == ["flmaudio/models/modeling_flmaudio.py"]
    lines = path.read_text().splitlines()
    assert lines[943] == "    def forward_audio(self, transformer_output_states, audio_input_ids):"
    assert lines[944] == "        return self.aud_output_layers(transformer_output_states, audio_input_ids)"
    assert lines[946] == "    def _get_initial_token(self) -> torch.Tensor:" and len(lines) == 947


def test_the_image_manifests_pin_the_commits_their_shims_cite():
    for image, commit, sample in (("personaplex", "3428dfd95309a7f3c84fd93259ded0f810d1ff91", "moshi/models/lm.py"),
                                  ("flm-audio", "41d768c9f61d954907c1c518709f2d9239de46a8",
                                   "flmaudio/models/modeling_flmaudio.py")):
        data = json.loads((ROOT / "images" / image / "upstream.json").read_text())
        assert data["schema"] == upstream.MANIFEST_SCHEMA and data["commit"] == commit
        assert sample in data["files"]
        assert commit in (ROOT / "images" / image / "shim.py").read_text()
        assert commit in (ROOT / "images" / image / "README.md").read_text()
