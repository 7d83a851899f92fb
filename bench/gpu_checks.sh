#!/bin/sh
# All four GPU checks in one command, on a GPU machine without internet (docs/gpu.md,
# "One command for all four"): installs what .gpu-carry/ holds (bench/gpu_carry.sh builds
# it here; the device call carries it: `carry: [".gpu-carry"]`), then runs
#
#   moshi      bench/gpu_check_moshi.py      (CUDA graphs pass only, fewer frames than its default)
#   vocalnet   bench/gpu_check_vocalnet.py   (K = 1, 2, 4 servers, 2 replies each)
#   flm-audio  bench/gpu_check_flm_audio.py  (upstream code and its transformers 4.51.3 from the carry)
#   voila      bench/gpu_check_voila.py      (the same)
#
# each under its own time limit (seconds: GPU_CHECK_LIMITS="moshi vocalnet flm voila",
# default "95 80 65 45", so that the whole run stays under 5 minutes), and prints a summary:
# every PASS / FAIL / SKIP line and every launch.gpu_step block. Each check's whole output
# is in $OUT/gpu_checks/<name>.log (else /tmp/gpu_checks/), which the device call brings back.
#
#   sh bench/gpu_checks.sh                 # exit 1 if a check failed or ran out of time
#   GPU_CHECKS="flm-audio voila" sh bench/gpu_checks.sh   # a subset
#   GPU_CHECKS_TINY=1 PYTHON=.venv/bin/python sh bench/gpu_checks.sh   # here: every check's --tiny
#                                          # dry run on the CPU, nothing installed into that Python
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CARRY="$ROOT/.gpu-carry"
PY=${PYTHON:-$(command -v python || command -v python3)}
LOGS="${OUT:-/tmp}/gpu_checks"
DEPS=/tmp/gpu-checks-deps
CHECKS=${GPU_CHECKS:-"moshi vocalnet flm-audio voila"}
set -- ${GPU_CHECK_LIMITS:-95 80 65 45}
LIMIT_MOSHI=$1 LIMIT_VOCALNET=$2 LIMIT_FLM=$3 LIMIT_VOILA=$4
mkdir -p "$LOGS"
T0=$(date +%s)

if [ ! -d "$CARRY/wheels" ]; then
    echo "gpu_checks: no $CARRY/wheels: build it with bench/gpu_carry.sh and carry .gpu-carry" >&2
    exit 2
fi
TINY=""
[ -n "${GPU_CHECKS_TINY:-}" ] && TINY=--tiny
echo "gpu_checks: $($PY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available() and torch.cuda.get_device_name(0))' 2>&1)"
# The machine's own Python gets what the Moshi and VocalNet checks lack; FLM-Audio's and
# Voila's transformers 4.51.3 go in a folder of their own (--deps), first on their sys.path only.
own=""
[ -n "$TINY" ] && DEPS=/tmp/gpu-checks-deps-tiny  # a dry run installs into a folder of its own only
for w in "$CARRY"/wheels/*.whl; do
    case $(basename "$w") in
        transformers-*|tokenizers-*|huggingface_hub-*) ;;
        *) own="$own $w" ;;
    esac
done
# shellcheck disable=SC2086
[ -n "$TINY" ] || $PY -m pip install --quiet --no-index --no-deps $own > "$LOGS/install.log" 2>&1 \
    || echo "gpu_checks: pip install (own) failed: see $LOGS/install.log"
$PY -m pip install --quiet --no-index --no-deps --target "$DEPS" --upgrade "$CARRY"/wheels/transformers-*.whl \
    "$CARRY"/wheels/tokenizers-*.whl "$CARRY"/wheels/huggingface_hub-*.whl >> "$LOGS/install.log" 2>&1 \
    || echo "gpu_checks: pip install (--target $DEPS) failed: see $LOGS/install.log"
echo "gpu_checks: installed in $(( $(date +%s) - T0 )) s"

failed=0
SUMMARY="$LOGS/summary.txt"
: > "$SUMMARY"
check() {  # name, limit, script and its arguments
    name=$1 limit=$2
    shift 2
    case " $CHECKS " in *" $name "*) ;; *) return 0 ;; esac
    start=$(date +%s)
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" "$PY" "$@" $TINY > "$LOGS/$name.log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    case $rc in
        0) verdict=ok ;;
        124|137) verdict="TIMEOUT after ${limit} s"; failed=1 ;;
        *) verdict="exit $rc"; failed=1 ;;
    esac
    {
        echo "== $name: $verdict in $took s ($*)"
        grep -E '^(PASS|FAIL|SKIP|INFO (speed|batched|sessions|servers|memory|model steps))' "$LOGS/$name.log"
        sed -n '/^INFO launch.gpu_step/,/^    source:/p' "$LOGS/$name.log"
        [ "$rc" = 0 ] || tail -n 5 "$LOGS/$name.log"
    } >> "$SUMMARY"
    echo "gpu_checks: $name: $verdict in $took s"
}
check moshi "$LIMIT_MOSHI" bench/gpu_check_moshi.py --no-graph-pass --frames 50 --batch-frames 20
check vocalnet "$LIMIT_VOCALNET" bench/gpu_check_vocalnet.py --speech "$CARRY/speech16k.wav" --servers 1,2,4 --reps 2
check flm-audio "$LIMIT_FLM" bench/gpu_check_flm_audio.py --upstream "$CARRY/upstream/flm-audio" --deps "$DEPS" --frames 150
check voila "$LIMIT_VOILA" bench/gpu_check_voila.py --upstream "$CARRY/upstream/voila" --deps "$DEPS"

echo "gpu_checks: summary ($(( $(date +%s) - T0 )) s in all; whole logs in $LOGS/):"
cat "$SUMMARY"
exit $failed
