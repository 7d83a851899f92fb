"""Stage the harness image's context and build it with the network disabled (docs/containers.md).

    python images/harness/build.py [--base IMAGE] [--tag duplexeval/harness:0.1] [--stage-only DIR]

The context is what every image of this project gets - Dockerfile, the image folder, the
package source, a wheelhouse - plus specs/ (the perception-model specs the backends look
up). The wheelhouse is downloaded on the host (pip's ordinary client, `--only-binary`)
inside images/harness/constraints.txt, for Python 3.11 / manylinux x86_64, and the two
sdists of requirements-nodeps.txt (openai-whisper, stable-ts) are built into wheels here
(`pip wheel --no-deps`, pure Python). On a GPU host PyPI's torch 2.11.0 is the CUDA build:
expect about 6 GB of wheels and a 9-10 GB image. Needs a Docker engine (`DOCKER_HOST`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


def _pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def stage(ctx: Path) -> dict:
    shutil.copyfile(HERE / "Dockerfile", ctx / "Dockerfile")
    shutil.copyfile(REPO / "images" / "base" / "install-wheels.sh", ctx / "install-wheels.sh")
    shutil.copytree(HERE, ctx / "images" / "harness", ignore=IGNORE, dirs_exist_ok=True)
    shutil.copytree(REPO / "duplexeval", ctx / "duplexeval", ignore=IGNORE, dirs_exist_ok=True)
    shutil.copytree(REPO / "specs", ctx / "specs", ignore=IGNORE, dirs_exist_ok=True)
    wheels = ctx / "wheels"
    wheels.mkdir()
    target = ["--python-version", "3.11", "--platform", "manylinux_2_28_x86_64", "--implementation", "cp"]
    _pip("download", "--only-binary=:all:", *target, "-d", str(wheels),
         "-r", str(HERE / "requirements.txt"), "-c", str(HERE / "constraints.txt"))
    nodeps = [ln.split("#")[0].strip() for ln in (HERE / "requirements-nodeps.txt").read_text().splitlines()]
    nodeps = [ln for ln in nodeps if ln]
    binary = [r for r in nodeps if not r.startswith(("openai-whisper", "stable-ts"))]
    source = [r for r in nodeps if r not in binary]
    _pip("download", "--no-deps", "--only-binary=:all:", *target, "-d", str(wheels), *binary)
    _pip("wheel", "--no-deps", "-w", str(wheels), *source)
    for name in ("requirements.txt", "requirements-nodeps.txt"):
        shutil.copyfile(HERE / name, wheels / name)
    import hashlib

    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(wheels.glob("*.whl"))}
    (wheels / "wheelhouse.json").write_text(json.dumps({"schema": "duplexeval.wheelhouse/1", "wheels": files}, indent=1))
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="duplexeval/base:bookworm",
                    help="FROM image: a CUDA base with Python 3.11, pinned by digest, on a GPU host")
    ap.add_argument("--tag", default="duplexeval/harness:0.1")
    ap.add_argument("--stage-only", type=Path, default=None, help="write the context here and stop")
    args = ap.parse_args()
    ctx = args.stage_only or Path(tempfile.mkdtemp(prefix="dxe-harness-"))
    ctx.mkdir(parents=True, exist_ok=True)
    files = stage(ctx)
    print(f"staged {ctx} ({len(files)} wheels)")
    if args.stage_only:
        return 0
    cmd = ["docker", "build", "--network", "none", "--build-arg", f"BASE={args.base}", "-t", args.tag,
           "--label", f"duplexeval.wheels={json.dumps(sorted(files))[:4000]}", str(ctx)]
    print("+", " ".join(cmd), flush=True)
    try:
        subprocess.run(cmd, check=True)
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
    print(f"built {args.tag}; check it: docker run --rm --gpus all --network none -v <weights cache>:/weights:ro {args.tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
