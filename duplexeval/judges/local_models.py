"""Local perception models (ASR, forced aligners, TTS): their specs, weights and errors.

The papers' own ears and voices (Qwen3-ASR, Qwen3-TTS, Whisper medium.en) run from
weights on disk, never from a hub at run time. Each is described by a judge spec in
`specs/judges/perception/` (`duplexeval ls judges` lists it with its weights status) with
`task: asr | forced-alignment | tts`, whose `provider` is the backend and whose `model`
is the name a benchmark's `asr` block (or a suite's `tts` block) uses; its `weights`
block says where the files come from:

  hub weights   `repo`, `revision` (40 hex), `files`: fetched by `duplexeval weights fetch
                <spec id>` into $DUPLEXEVAL_WEIGHTS_CACHE/<spec id>/<revision>/ and verified
                against that folder's manifest by `duplexeval.weights.verified_weights_dir`
  file weights  `source` (e.g. openai-whisper) and `files` each with a `sha256`: placed
                by hand in $DUPLEXEVAL_WEIGHTS_CACHE/<spec id>/files/ and checked here

A backend asked for a model that has no spec may be given a local path instead (a folder
or a checkpoint file): the tests do that with randomly initialised tiny models. Either way
the weights' identity (pinned revision + file hashes) goes into every cache key.
Which specs are local models, and the references to them, are the spec layer's
(duplexeval.specs.local_models).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.io import sha256_json
from duplexeval.resources import weights_root
from duplexeval.specs.local_models import LOCAL_TASKS, find_spec, is_local_path, local_specs  # noqa: F401  (public here)

FILES_FOLDER = "files"  # file weights live in <cache>/<spec id>/files/


class MissingExtraError(ImportError):
    """An optional backend is not installed; the message names what to install."""


class MissingWeightsError(RuntimeError):
    """A backend's weights are not on disk (or differ from their pins); the message says where to put them."""


@dataclass(frozen=True)
class LocalWeights:
    """Where a model's files are and what they are (the identity goes into cache keys)."""

    folder: Path
    identity: str            # sha256 over the pin and every file's sha256
    spec_id: str | None      # the spec they came from; None for a local path
    describe: str            # one line for messages and manifests

    def to_json(self) -> dict[str, Any]:
        return {"spec": self.spec_id, "sha256": self.identity, "source": self.describe}


# --- weights ------------------------------------------------------------------------

_HASH_MEMO: dict[tuple[str, int, int], str] = {}


def file_sha256(path: Path) -> str:
    """sha256 of a file, once per (path, size, mtime) per process."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _HASH_MEMO:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _HASH_MEMO[key] = h.hexdigest()
    return _HASH_MEMO[key]


def path_weights(path: str | Path) -> LocalWeights:
    """A local folder or checkpoint file used as is (tests, hand-made models): hashed whole."""
    p = Path(path).expanduser()
    if not p.exists():
        raise MissingWeightsError(f"model path {p} does not exist")
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    hashes = {str(f.relative_to(p) if p.is_dir() else f.name): file_sha256(f) for f in files}
    return LocalWeights(folder=p if p.is_dir() else p.parent, identity=sha256_json({"files": hashes}),
                        spec_id=None, describe=f"local path {p}")


def spec_weights(spec: Any) -> LocalWeights:
    """The verified weights of a local-model spec; MissingWeightsError says what to do otherwise."""
    from duplexeval import weights as w

    data = getattr(spec, "data", spec)
    spec_id = getattr(spec, "id", None) or data["id"]
    block = data.get("weights") or {}
    if w.is_hub_backed(block):
        try:
            folder = w.verified_weights_dir(spec, rehash=False)
        except w.WeightsError as exc:
            raise MissingWeightsError(f"{data.get('label', spec_id)}: {exc}") from None
        assert folder is not None
        manifest = w.read_manifest(folder) or {}
        hashes = {e["path"]: e["sha256"] for e in manifest.get("files", [])}
        identity = sha256_json({"repo": block["repo"], "revision": block["revision"], "files": hashes})
        return LocalWeights(folder, identity, spec_id, f"{block['repo']}@{block['revision']}")
    files = block.get("files") or []
    if not files:
        raise MissingWeightsError(f"spec {spec_id}: weights pin no files")
    folder = weights_root() / spec_id / FILES_FOLDER
    problems, hashes = [], {}
    for entry in files:
        path = folder / entry["path"]
        if not path.is_file():
            problems.append(f"{entry['path']}: missing")
            continue
        digest = file_sha256(path)
        if entry.get("sha256") and digest != entry["sha256"]:
            problems.append(f"{entry['path']}: sha256 {digest[:12]}... differs from the pinned {entry['sha256'][:12]}...")
        hashes[entry["path"]] = digest
    if problems:
        names = ", ".join(f"{e['path']} (sha256 {e.get('sha256', '?')})" for e in files)
        raise MissingWeightsError(
            f"weights of {spec_id} ({block.get('source', 'files')}): " + "; ".join(problems)
            + f"\nplace {names} in {folder}/ by hand"
            + (f"\n{block['how']}" if block.get("how") else ""))
    return LocalWeights(folder, sha256_json({"source": block.get("source"), "files": hashes}), spec_id,
                        f"{block.get('source', 'files')}: {', '.join(sorted(hashes))}")


def weights_status(data: dict[str, Any]) -> str:
    """One word or two for `duplexeval ls judges`: where this spec's weights stand on this machine."""
    from duplexeval import weights as w

    block = data.get("weights")
    if data.get("task") not in LOCAL_TASKS:
        return "-"
    if not block:
        return "bundled"
    if w.is_hub_backed(block):
        try:
            pin = w.weights_pin(data)
        except w.WeightsError:
            return "unpinned"
        assert pin is not None
        problems = w.check_folder(pin, pin.folder(), rehash=False)
        if not problems:
            return "verified"
        if all(p.endswith(": missing") or p.startswith(f"{w.MANIFEST_NAME}: missing") for p in problems):
            return "not fetched"
        return "changed"
    try:
        spec_weights(data)
    except MissingWeightsError as exc:
        return "changed" if "differs" in str(exc) else "not placed"
    return "verified"
