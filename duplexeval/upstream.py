"""Upstream model code in an image, from a pinned commit, verified file by file, patched by us.

Why: PersonaPlex and FLM-Audio publish their inference code on GitHub only (not PyPI).
None of it is committed here; an image builds from a source tarball of a pinned commit
that the user fetches on a machine with internet and places in the image folder
(`images/<id>/upstream.tar.gz`, see that folder's README). Builds have no network, so
this module, run inside the build (`python3 -m duplexeval.upstream install ...`, stdlib
only), is what makes that tarball trustworthy:

- `images/<id>/upstream.json` (written here, by `manifest`, from a clone of the upstream
  repo) names the repo, the commit, the sub-folder the image uses and the sha256 of every
  file in it at that commit;
- `install` extracts that sub-folder (the tarball's single top folder, whatever its name:
  `git archive --prefix` and GitHub's codeload tarballs differ only there), refuses
  links and paths leaving the destination, and checks every file against the manifest:
  a tarball of another commit, or an edited file, fails the build with the file's name;
- then it applies our own patches (unified diffs, `images/<id>/*.patch`), each hunk
  matched exactly (no fuzz): a patch that no longer fits fails loudly instead of
  half-applying.

Hashes are of file contents, not of the tarball, so any faithful tarball of the commit
passes (gzip bytes differ between tools; contents do not).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

MANIFEST_SCHEMA = "duplexeval.upstream/1"


class UpstreamError(RuntimeError):
    """The tarball is not the pinned commit, or a patch does not apply; the message names the file."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- maintainer side: the manifest, from a git clone -------------------------------------

def manifest(git_dir: Path, commit: str, under: str, repo: str) -> dict:
    """sha256 of every file below `under` at `commit` of the clone at `git_dir`."""
    prefix = under.strip("/") + "/" if under.strip("/") else ""

    def git(*args: str) -> bytes:
        return subprocess.run(["git", "-C", str(git_dir), *args], check=True, capture_output=True).stdout

    full = git("rev-parse", f"{commit}^{{commit}}").decode().strip()
    listing = git("ls-tree", "-r", "-z", "--full-tree", full).split(b"\0")
    files: dict[str, str] = {}
    for entry in listing:
        if not entry:
            continue
        meta, path = entry.decode().split("\t", 1)
        mode, kind, _ = meta.split()
        if kind != "blob" or not path.startswith(prefix) or mode == "120000":
            continue
        files[path[len(prefix):]] = _sha256(git("cat-file", "blob", f"{full}:{path}"))
    return {"schema": MANIFEST_SCHEMA, "repo": repo, "commit": full, "under": under.strip("/"),
            "files": dict(sorted(files.items()))}


# --- build side: extract, verify, patch ---------------------------------------------------

def _members(tar: tarfile.TarFile, under: str) -> dict[str, tarfile.TarInfo]:
    """Regular files of the tarball below `<top>/<under>/`, keyed by their path inside `under`."""
    tops = {PurePosixPath(m.name).parts[0] for m in tar.getmembers() if PurePosixPath(m.name).parts
            and m.name not in ("pax_global_header",) and m.type != tarfile.XGLTYPE}
    tops.discard("pax_global_header")
    if len(tops) != 1:
        raise UpstreamError(f"tarball has {len(tops)} top-level entries {sorted(tops)[:4]}; "
                            "expected one folder (git archive --prefix=NAME/ or a GitHub tarball)")
    top = tops.pop()
    base = PurePosixPath(top, *PurePosixPath(under).parts) if under else PurePosixPath(top)
    out: dict[str, tarfile.TarInfo] = {}
    for m in tar.getmembers():
        p = PurePosixPath(m.name)
        if p.is_absolute() or ".." in p.parts:
            raise UpstreamError(f"tarball member {m.name!r} leaves the extraction folder")
        try:
            rel = p.relative_to(base)
        except ValueError:
            continue
        if m.issym() or m.islnk():
            raise UpstreamError(f"tarball member {m.name!r} is a link; links are not extracted")
        if m.isfile():
            out[str(rel)] = m
    return out


def apply_patch(root: Path, patch_text: str, patch_name: str = "patch") -> list[str]:
    """Applies a unified diff (paths a/... b/..., as `git diff` writes them) under `root`.

    Every hunk must match exactly at its stated line (context and removed lines); no
    fuzz, no offset search: the patch was written against the pinned commit. Returns the
    patched paths.
    """
    patched: list[str] = []
    blocks = re.split(r"(?m)^(?=--- )", patch_text)
    for block in blocks:
        if not block.startswith("--- "):
            continue
        lines = block.splitlines(keepends=True)
        if len(lines) < 2 or not lines[1].startswith("+++ "):
            raise UpstreamError(f"{patch_name}: '--- ' line without a '+++ ' line")
        target = lines[1][4:].strip().split("\t")[0]
        target = target[2:] if target.startswith("b/") else target
        if PurePosixPath(target).is_absolute() or ".." in PurePosixPath(target).parts:
            raise UpstreamError(f"{patch_name}: target {target!r} leaves the source folder")
        path = root / target
        if not path.is_file():
            raise UpstreamError(f"{patch_name}: {target} does not exist in the upstream source")
        src = path.read_text(encoding="utf-8").splitlines(keepends=True)
        out: list[str] = []
        pos = 0  # index into src of the next line not yet copied
        i = 2
        while i < len(lines):
            header = re.match(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", lines[i])
            if not header:
                if lines[i].strip() == "":
                    i += 1
                    continue
                raise UpstreamError(f"{patch_name}: {target}: expected a hunk header, got {lines[i]!r}")
            start = int(header[1]) - 1 if int(header[2] or 1) else int(header[1])
            i += 1
            if start < pos:
                raise UpstreamError(f"{patch_name}: {target}: hunks overlap or are out of order")
            out.extend(src[pos:start])
            pos = start
            while i < len(lines) and not lines[i].startswith("@@") and not lines[i].startswith("--- "):
                line = lines[i]
                tag, body = line[:1], line[1:]
                if line.startswith("\\"):  # "\ No newline at end of file"
                    i += 1
                    continue
                if tag in (" ", "-"):
                    if pos >= len(src) or src[pos].rstrip("\n") != body.rstrip("\n"):
                        have = src[pos].rstrip("\n") if pos < len(src) else "<end of file>"
                        raise UpstreamError(f"{patch_name}: {target}:{pos + 1}: expected {body.rstrip()!r}, "
                                            f"found {have.rstrip()!r} (the patch does not fit this source)")
                    if tag == " ":
                        out.append(src[pos])
                    pos += 1
                elif tag == "+":
                    out.append(body if body.endswith("\n") else body + "\n")
                else:
                    raise UpstreamError(f"{patch_name}: {target}: bad hunk line {line!r}")
                i += 1
        out.extend(src[pos:])
        path.write_text("".join(out), encoding="utf-8")
        patched.append(target)
    if not patched:
        raise UpstreamError(f"{patch_name}: no file patched (not a unified diff?)")
    return patched


def install(tarball: Path, manifest_path: Path, dest: Path, patches: Sequence[Path] = ()) -> dict:
    """Extract the pinned sub-folder of `tarball` into `dest`, verify it, apply `patches`."""
    spec = json.loads(manifest_path.read_text(encoding="utf-8"))
    if spec.get("schema") != MANIFEST_SCHEMA:
        raise UpstreamError(f"{manifest_path}: not a {MANIFEST_SCHEMA} manifest")
    if not tarball.is_file():
        raise UpstreamError(f"{tarball}: missing; fetch {spec['repo']} at commit {spec['commit']} "
                            "as described in this image folder's README.md")
    expected: dict[str, str] = spec["files"]
    under = spec.get("under", "")
    with tempfile.TemporaryDirectory(prefix="upstream-") as tmp:
        stage = Path(tmp) / "src"
        with tarfile.open(tarball, "r:*") as tar:
            members = _members(tar, under)
            missing = sorted(set(expected) - set(members))
            if missing:
                raise UpstreamError(f"{tarball}: not {spec['repo']}@{spec['commit'][:12]}: missing "
                                    f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
            for rel, member in sorted(members.items()):
                if rel not in expected:
                    continue  # files outside the manifest (none in a faithful tarball) stay out
                data = tar.extractfile(member).read()  # type: ignore[union-attr]
                if _sha256(data) != expected[rel]:
                    raise UpstreamError(f"{tarball}: {under + '/' if under else ''}{rel} differs from "
                                        f"{spec['repo']}@{spec['commit'][:12]} (sha256 {_sha256(data)[:12]}..., "
                                        f"expected {expected[rel][:12]}...)")
                out = stage / rel
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(data)
        applied = {str(p.name): apply_patch(stage, p.read_text(encoding="utf-8"), p.name) for p in patches}
        if dest.exists() and any(dest.iterdir()) and not (dest / "UPSTREAM.json").is_file():
            # stdlib only (image builds), so not duplexeval.cli_params.replace_guard, but the same rule
            raise UpstreamError(f"{dest}: not empty and not an earlier install (no UPSTREAM.json): "
                                "choose an empty or new --dest")
        if dest.exists():
            shutil.rmtree(dest)  # an earlier install of upstream code: nothing else is deleted
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(stage, dest)
    record = {"repo": spec["repo"], "commit": spec["commit"], "under": under, "files": len(expected),
              "patches": applied}
    (dest / "UPSTREAM.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m duplexeval.upstream", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("manifest", help="write upstream.json from a git clone (maintainers, with internet)")
    m.add_argument("git_dir", type=Path)
    m.add_argument("commit")
    m.add_argument("--repo", required=True, help="e.g. github:cofe-ai/flm-audio")
    m.add_argument("--under", default="", help="the sub-folder the image uses (e.g. moshi)")
    m.add_argument("-o", "--output", type=Path, required=True)
    i = sub.add_parser("install", help="extract, verify and patch (inside an image build)")
    i.add_argument("--tarball", type=Path, required=True)
    i.add_argument("--manifest", type=Path, required=True)
    i.add_argument("--dest", type=Path, required=True)
    i.add_argument("--patch", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    try:
        if args.cmd == "manifest":
            data = manifest(args.git_dir, args.commit, args.under, args.repo)
            args.output.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            print(f"{args.output}: {len(data['files'])} files of {args.repo}@{data['commit']}")
        else:
            record = install(args.tarball, args.manifest, args.dest, args.patch)
            print(f"installed {record['repo']}@{record['commit'][:12]} ({record['files']} files) into {args.dest}; "
                  f"patches: {record['patches'] or 'none'}")
    except (UpstreamError, subprocess.CalledProcessError, OSError, tarfile.TarError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
