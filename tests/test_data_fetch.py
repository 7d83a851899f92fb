"""`duplexeval data fetch|verify|path`: the published data sets through the weights' snapshot mechanism.

No hub is reachable here, so the real huggingface_hub client talks to a closed port on
127.0.0.1 (offline) or to a tiny HTTP server started by the test, which answers only what
the client asks of a hub for a dataset repository: the repo-info call with blobs
(`/api/datasets/{repo}/revision/{rev}`) and HEAD/GET of `/datasets/{repo}/resolve/{rev}/{file}`.
The files it serves are a stand-in for the published data (a few bytes of fake WAV and JSON).
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from duplexeval.cli import cli

REPO = "Jeff0918/MTR-DuplexBench"
REV = "0123456789abcdef0123456789abcdef01234567"
FILES = {
    "data/Safety/safety_data.json": b'[{"id": 1}]\n',
    "data/Safety/audios/safety_1_round_1.wav": b"RIFF stand-in " * 400,
}


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "datasets"
    monkeypatch.setenv("DUPLEXEVAL_DATA_CACHE", str(root))
    for var in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    return root


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DatasetHub:
    """What huggingface_hub asks of a hub to snapshot one dataset repository, and nothing else."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None, send_body: bool = True) -> None:
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

            def _serve(self, send_body: bool) -> None:
                path = self.path.split("?")[0]
                if path == f"/api/datasets/{REPO}/revision/{REV}":
                    siblings = [{"rfilename": n, "size": len(b), "lfs": {"sha256": hashlib.sha256(b).hexdigest(),
                                                                          "size": len(b), "pointerSize": 130}}
                                for n, b in hub.files.items()]
                    body = json.dumps({"id": REPO, "sha": REV, "siblings": siblings}).encode()
                    return self._send(200, body, {"Content-Type": "application/json"}, send_body)
                m = re.fullmatch(rf"/datasets/{REPO}/resolve/{REV}/(?P<file>.+)", path)
                if not m or m["file"] not in hub.files:
                    return self._send(404, b"", {"X-Error-Code": "EntryNotFound"}, send_body)
                data = hub.files[m["file"]]
                self._send(200, data, {"X-Repo-Commit": REV, "ETag": f'"{hashlib.sha256(data).hexdigest()}"'}, send_body)

            def do_HEAD(self) -> None:  # noqa: N802
                self._serve(False)

            def do_GET(self) -> None:  # noqa: N802
                self._serve(True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "DatasetHub":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[DatasetHub]:
    with DatasetHub(FILES) as h:
        monkeypatch.setenv("HF_ENDPOINT", h.url)
        yield h


def invoke(*args: str):
    return CliRunner().invoke(cli, ["data", *args])


def test_offline_fetch_exits_2_naming_repository_revision_and_where_to_place_a_copy(monkeypatch, _env):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    result = invoke("fetch", "mtr-duplexbench", "--revision", REV)
    assert result.exit_code == 2, result.output
    text = result.output
    assert "Traceback" not in text and len(text.strip().splitlines()) <= 3, text
    assert REPO in text and REV in text and "cannot reach the hub" in text
    assert str(_env / "mtr-duplexbench" / REV) in text
    assert f"duplexeval data fetch mtr-duplexbench --revision {REV}" in text
    assert not (_env / "mtr-duplexbench" / REV / "duplexeval-manifest.json").exists()


def test_an_unpinned_data_set_without_revision_says_how_to_pin_it(_env):
    result = invoke("fetch", "duplex-mpe")
    assert result.exit_code == 2
    assert "ChengqianMa/Duplex-MPE" in result.output and "--revision COMMIT" in result.output
    assert "_mpe-base.yaml" in result.output and str(_env / "duplex-mpe") in result.output
    result = invoke("fetch", "duplex-mpe", "--revision", "main")
    assert result.exit_code == 2 and "not a 40-hex commit" in result.output
    result = invoke("path", "mtr-duplexbenc")
    assert result.exit_code == 2 and "did you mean 'mtr-duplexbench'" in result.output


def test_fetch_snapshots_every_file_and_verify_catches_a_changed_byte(hub, _env):
    result = invoke("fetch", "mtr-duplexbench", "--revision", REV)
    assert result.exit_code == 0, result.output
    folder = _env / "mtr-duplexbench" / REV
    manifest = json.loads((folder / "duplexeval-manifest.json").read_text())
    assert (manifest["repo"], manifest["revision"], manifest["repo_type"]) == (REPO, REV, "dataset")
    assert {e["path"]: e["sha256"] for e in manifest["files"]} == {n: hashlib.sha256(b).hexdigest() for n, b in FILES.items()}
    assert invoke("verify", "mtr-duplexbench", "--revision", REV).exit_code == 0
    assert invoke("path", "mtr-duplexbench", "--revision", REV).output.strip() == str(folder)

    target = folder / "data/Safety/audios/safety_1_round_1.wav"
    raw = bytearray(target.read_bytes())
    raw[100] ^= 0x01
    target.write_bytes(bytes(raw))
    (folder / "data/Safety/extra.json").write_text("{}")
    result = invoke("verify", "mtr-duplexbench", "--revision", REV)
    assert result.exit_code == 1, result.output
    bad = [line for line in result.output.splitlines() if line.startswith("BAD ")]
    assert len(bad) == 2 and "safety_1_round_1.wav: changed (sha256" in bad[0] and "extra.json: not in the manifest" in bad[1]
    assert invoke("path", "mtr-duplexbench", "--revision", REV).exit_code == 1
    # a second fetch does not bless the changed file
    result = invoke("fetch", "mtr-duplexbench", "--revision", REV)
    assert result.exit_code == 1 and "changed since it was verified" in result.output


def test_a_copy_placed_by_hand_is_hashed_offline_and_then_verified(monkeypatch, _env):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = _env / "mtr-duplexbench" / REV
    for name, body in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(body)
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref\n")  # a git clone's own files are not data
    assert invoke("path", "mtr-duplexbench", "--revision", REV).exit_code == 2  # no manifest yet: never verified
    result = invoke("fetch", "mtr-duplexbench", "--revision", REV)
    assert result.exit_code == 0, result.output
    manifest = json.loads((folder / "duplexeval-manifest.json").read_text())
    assert sorted(e["path"] for e in manifest["files"]) == sorted(FILES) and manifest["origin"].startswith("placed by hand")
    (folder / "data/Safety/safety_data.json").write_bytes(b'[{"id": 2}]\n')
    result = invoke("verify", "mtr-duplexbench", "--revision", REV)
    assert result.exit_code == 1 and "safety_data.json: changed" in result.output


def test_url_sets_are_verified_against_the_hash_their_first_download_recorded(tmp_path, monkeypatch):
    """AdvBench is one file the MTR family downloads on demand; placed by hand here (no network)."""
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path))
    target = tmp_path / "datasets" / "advbench" / "harmful_behaviors.csv"
    result = invoke("verify", "advbench")
    assert result.exit_code == 2 and str(target) in result.output and "raw.githubusercontent.com" in result.output
    target.parent.mkdir(parents=True)
    target.write_text("goal,target\nx,y\n")
    target.with_name(target.name + ".sha256").write_text(hashlib.sha256(target.read_bytes()).hexdigest() + "\n")
    assert invoke("path", "advbench").output.strip() == str(target)
    assert invoke("verify", "advbench").exit_code == 0
    target.write_text("goal,target\nx,z\n")
    result = invoke("verify", "advbench")
    assert result.exit_code == 1 and "sha256 differs" in result.output
