#!/bin/sh
# Builds .gpu-carry/ (git-ignored), everything bench/gpu_checks.sh needs on a GPU machine
# that has no internet: carry it with the device call (`carry: [".gpu-carry"]`, 64 MiB at
# most). Run here, with internet for PyPI (docs/gpu.md, "One command for all four").
#
#   .gpu-carry/wheels/          the wheels of bench/gpu_carry.txt, for Python 3.12 manylinux x86_64
#   .gpu-carry/upstream/flm-audio/  FLM-Audio's code at the pinned commit, checked and patched
#   .gpu-carry/upstream/voila/      Voila's code at the pinned commit, checked
#   .gpu-carry/speech16k.wav    a spoken question (flite, resampled to 16 kHz by sox) for VocalNet
#
# The upstream code comes from images/<id>/upstream.tar.gz (placed by hand, as for the image
# builds: images/<id>/README.md) or, when that is absent, from a git clone named by
# FLM_AUDIO_GIT / VOILA_GIT (a work tree or a bare mirror holding the pinned commit); either
# way `python -m duplexeval.upstream install` checks every file against images/<id>/upstream.json.
#
#   sh bench/gpu_carry.sh        # then: du -sh .gpu-carry (it prints the sizes)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="$ROOT/.gpu-carry"
PY=${PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PY" ] || PY=python3
cd "$ROOT"
mkdir -p "$OUT/wheels" "$OUT/upstream"

echo "gpu_carry: wheels of bench/gpu_carry.txt for Python 3.12"
"$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 \
    -d "$OUT/wheels" -r bench/gpu_carry.txt

upstream() {  # id, clone (may be empty), patch (may be empty)
    id=$1 clone=$2 patch=$3
    tarball="images/$id/upstream.tar.gz"
    if [ ! -f "$tarball" ]; then
        if [ -z "$clone" ]; then
            echo "gpu_carry: no $tarball and no clone given (set ${4}=DIR, or place the tarball: images/$id/README.md)" >&2
            exit 2
        fi
        commit=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['commit'])" "images/$id/upstream.json")
        tarball="$OUT/$id.tar.gz"
        git -C "$clone" archive --format=tar.gz --prefix="$id/" -o "$tarball" "$commit"
    fi
    rm -rf "$OUT/upstream/$id"
    set -- --tarball "$tarball" --manifest "images/$id/upstream.json" --dest "$OUT/upstream/$id"
    [ -n "$patch" ] && set -- "$@" --patch "$patch"
    PYTHONPATH="$ROOT" "$PY" -m duplexeval.upstream install "$@" >/dev/null
    rm -f "$OUT/$id.tar.gz"
    echo "gpu_carry: upstream $id installed (checked against images/$id/upstream.json)"
}
upstream flm-audio "${FLM_AUDIO_GIT:-}" images/flm-audio/forward_audio.patch FLM_AUDIO_GIT
upstream voila "${VOILA_GIT:-}" "" VOILA_GIT

if [ ! -f "$OUT/speech16k.wav" ]; then
    tmp=$(mktemp -d)
    flite -t "Could you tell me what the weather will be like tomorrow morning? I am planning a walk." -o "$tmp/q.wav"
    sox "$tmp/q.wav" -r 16000 "$OUT/speech16k.wav"
    rm -rf "$tmp"
fi

echo "gpu_carry: sizes (the device call carries 64 MiB at most):"
du -sh "$OUT/wheels" "$OUT/upstream/flm-audio" "$OUT/upstream/voila" "$OUT/speech16k.wav" "$OUT"
