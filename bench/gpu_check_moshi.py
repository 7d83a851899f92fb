"""GPU check of the Moshi-family adapter on full-size, randomly initialised Moshi (no weights).

Why random weights: the three properties checked here are properties of the code path
(moshi 0.2.13's LMGen + Mimi driven by `duplexeval.shims.moshi_family`) at full size and
under CUDA graphs, not of what the model says; a random 7B Moshi has the real shapes,
KV-cache sizes and captured graphs, and needs no 15 GB download.

Checks, one line each (PASS/FAIL + figure), exit 1 if any fails:

- speed: frames per second at batch 1 through encode -> LM step -> decode (the shim's
  `step`, CUDA graphs captured in the warm-up); PASS at >= 12.5 frames/s (real time);
- fork: snapshot after K frames, run M frames, restore in place, run them again, restore
  again, run again: outputs (tokens and PCM) bit-identical all three times, and different
  from simply continuing (else the check could not see anything);
- teacher forcing: forced audio through the second Mimi; the forced codes of frame t must
  come out verbatim (all 8 codebooks) in the LM's output tokens at step t+1.

Then the step cost of batched sessions (issue 26, item 4), one INFO line per width N of
`--batches` (default 1,2,4,8,16,32): the server streams at width N (the shim's
`--max-sessions N` path, `set_max_sessions`), N sessions each get a frame per step, and
the line gives ms per batched step (encode -> LM step -> decode of N rows), x real time of
all N sessions together, and whether the step fits in a frame; the last line says how
many sessions one GPU holds at 1x real time. The same widths are then measured without
CUDA graphs in a child process started with NO_CUDA_GRAPH=1 (moshi reads it at import, so
one process cannot measure both): one command gives both sets of figures
(`--no-graph-pass` skips the child). Last, the `launch.gpu_step` block of the CUDA-graph
pass for specs/models/moshi.yaml, checked against the spec schema (bench/gpu_step_block.py).

On a machine without CUDA it prints one line saying so and `SKIP`, and exits 0.
`--tiny` runs the same checks with the tiny config on CPU (a dry run of this script;
no CUDA graphs there, so it proves nothing about them).

    python bench/gpu_check_moshi.py                 # on a CUDA machine: checks, then batched costs
                                                    # with and without CUDA graphs, under 5 minutes
    python bench/gpu_check_moshi.py --tiny          # dry run on CPU

Needs torch with CUDA and moshi 0.2.13 (+ einops, safetensors, sentencepiece, sphn,
huggingface_hub, numpy, websockets, jsonschema). On a machine without a package index,
carry them in a folder next to this script: `pip install --no-deps --target
bench/.gpu-deps moshi==0.2.13 einops sphn` (it is put on sys.path when present).
NO_TORCH_COMPILE=1 is set unless --compile (Triton needs a C compiler; CUDA graphs do not).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
if (HERE / ".gpu-deps").is_dir():
    sys.path.insert(0, str(HERE / ".gpu-deps"))

from gpu_check_common import forcing_line, run_checks, snapshot_mb  # noqa: E402  (bench/, beside this script)
from gpu_step_block import gpu_short_name, print_block  # noqa: E402

SEED = 1234
REAL_TIME_FPS = 12.5  # 80 ms frames


def _tiny_configs(loaders: object) -> tuple[dict, dict]:
    """The CI tiny config (issue 11): Mimi dim 64 / 8 filters / 1 layer, LM dim 64 / 2 layers."""
    seanet = dict(loaders._seanet_kwargs, dimension=64, n_filters=8)  # type: ignore[attr-defined]
    mimi = dict(loaders._mimi_config)  # type: ignore[attr-defined]
    mimi["seanet"] = seanet
    mimi["quantizer"] = dict(loaders._quantizer_kwargs, dimension=32, input_dimension=64, output_dimension=64)  # type: ignore[attr-defined]
    mimi["transformer"] = dict(loaders._transformer_kwargs, d_model=64, num_heads=8, num_layers=1,  # type: ignore[attr-defined]
                               dim_feedforward=256, input_dimension=64, output_dimensions=[64])
    lm = dict(loaders._lm_kwargs, dim=64, num_heads=4, num_layers=2, depformer_dim=32, depformer_num_heads=4,  # type: ignore[attr-defined]
              depformer_num_layers=2, depformer_dim_feedforward=int(4.125 * 32))
    return mimi, lm


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=100, help="frames timed for the speed check")
    parser.add_argument("--fork-frames", type=int, default=16, help="M: frames replayed after each restore")
    parser.add_argument("--tiny", action="store_true", help="tiny config on CPU: a dry run of the script")
    parser.add_argument("--compile", action="store_true", help="leave moshi's torch.compile on")
    parser.add_argument("--batches", default=None,
                        help="widths for the batched step cost (default 1,2,4,8,16,32; --tiny: 1,2,4); 'none' skips")
    parser.add_argument("--batch-frames", type=int, default=40, help="batched steps timed per width")
    parser.add_argument("--no-graph-pass", action="store_true",
                        help="skip the second pass (the batched step costs without CUDA graphs, in a child process)")
    parser.add_argument("--batch-only", action="store_true", help="only the batched step costs (the child's pass)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="after the batched costs, cProfile N batched steps at the widest width and print "
                             "the 20 functions with the most own time (where a batched step's time goes)")
    args = parser.parse_args()

    try:
        import torch
    except ImportError:
        print("gpu_check_moshi: torch is not installed; nothing to check here")
        print("SKIP gpu_check_moshi: no torch")
        return 0
    if not args.tiny and not torch.cuda.is_available():
        print(f"gpu_check_moshi: no CUDA device (torch {torch.__version__}); this check needs one")
        print("SKIP gpu_check_moshi: no CUDA")
        return 0
    if not args.compile:
        os.environ.setdefault("NO_TORCH_COMPILE", "1")  # read by moshi at import
    try:
        import moshi
        import numpy as np
        from moshi.models import LMGen, loaders

        from duplexeval.shims.moshi_family import FamilyModels, MoshiFamilyServer
    except ImportError as exc:
        print(f"FAIL setup: cannot import {exc.name or exc} (needs moshi 0.2.13 and its light deps; see --help)")
        return 2

    device = "cpu" if args.tiny else "cuda"
    dtype = torch.float32 if args.tiny else torch.bfloat16
    if args.tiny:
        torch.set_num_threads(1)
    where = (f"tiny config on CPU, torch {torch.__version__}" if args.tiny else
             f"full-size random Moshi on {torch.cuda.get_device_name(0)}, torch {torch.__version__} (CUDA {torch.version.cuda})")
    print(f"gpu_check_moshi: moshi {getattr(moshi, '__version__', '?')}, {where}, "
          f"torch.compile {'on' if args.compile else 'off'}")
    if getattr(moshi, "__version__", "") != "0.2.13":
        print(f"  note: written against moshi 0.2.13, found {getattr(moshi, '__version__', '?')}")

    class RandomMoshi(MoshiFamilyServer):
        model_name = "moshi-random"
        max_sessions_supported = 64  # as the Moshi shim: one batch row per session

        def load_models(self) -> FamilyModels:
            mimi_cfg, lm_kwargs = _tiny_configs(loaders) if args.tiny else (None, None)  # None: moshi's 7B defaults
            torch.manual_seed(SEED)
            mimi = loaders.get_mimi(None, mimi_cfg, device=device, num_codebooks=8)
            forced = loaders.get_mimi(None, mimi_cfg, device=device, num_codebooks=8)
            forced.load_state_dict(mimi.state_dict())
            lm = loaders.get_moshi_lm(None, lm_kwargs=lm_kwargs, device=device, dtype=dtype)
            lm.eval()
            return FamilyModels(mimi=mimi, lm_gen=LMGen(lm), forced_mimi=forced, device=device)

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    t_load = time.perf_counter()
    try:
        server = RandomMoshi(warmup_frames=4)
        sync()
    except Exception as exc:  # e.g. out of memory: one line, not a traceback
        print(f"FAIL setup: building the random model failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        return 2
    params = sum(p.numel() for p in server.lm_gen.lm_model.parameters()) / 1e9
    graphs = getattr(getattr(server.lm_gen._streaming_state, "graphed_main", None), "_graph", None) is not None
    print(f"  built in {time.perf_counter() - t_load:.1f} s: LM {params:.2f} B parameters, "
          f"CUDA graphs {'captured' if graphs else 'not captured'}")
    if not args.tiny and not graphs:
        print("  note: the LM's CUDA graph was not captured in the warm-up (NO_CUDA_GRAPH set?)")

    rng = np.random.default_rng(SEED)
    n_total = max(args.frames, 3 * args.fork_frames + 8) + 8
    user = (rng.standard_normal((n_total, 1920)) * 0.1).astype(np.float32)
    forced_audio = (rng.standard_normal((n_total, 1920)) * 0.1).astype(np.float32)

    def session(seed: int) -> None:
        server.reset()
        server.start_session("lockstep", seed, None)

    def check_speed() -> str:
        session(SEED)
        for i in range(4):
            server.step(i, user[i], None)
        sync()
        t0 = time.perf_counter()
        for i in range(args.frames):
            server.step(4 + i, user[4 + i], None)
        sync()
        dt = time.perf_counter() - t0
        fps = args.frames / dt
        return (f"{'PASS' if fps >= REAL_TIME_FPS else 'FAIL'} speed: {fps:.1f} frames/s at batch 1 "
                f"({1000 * dt / args.frames:.1f} ms per 80 ms frame over {args.frames} frames; "
                f"real time needs {REAL_TIME_FPS})")

    def run(start: int, count: int) -> list[tuple[np.ndarray, torch.Tensor | None]]:
        out = []
        for i in range(start, start + count):
            pcm = server.step(i, user[i], None)
            tok = server.last_tokens
            out.append((pcm.copy(), None if tok is None else tok.detach().clone().cpu()))
        return out

    def same(a: list, b: list) -> bool:
        return len(a) == len(b) and all(
            np.array_equal(pa, pb) and ((ta is None and tb is None) or (ta is not None and tb is not None and torch.equal(ta, tb)))
            for (pa, ta), (pb, tb) in zip(a, b))

    def check_fork() -> str:
        session(SEED + 1)
        k, m = 8, args.fork_frames
        run(0, k)
        snap = server.snapshot()
        size_mb = snapshot_mb(snap)
        first = run(k, m)
        server.restore(snap)
        second = run(k, m)
        server.restore(snap)
        third = run(k, m)
        control = run(k + m, m)  # not restored: continues from the end of `third`
        exact = same(first, second) and same(first, third)
        sensitive = not same(first, control)
        detail = ("bit-exact" if exact else "DIFFERENT") + f" after 2 in-place restores ({m} frames each, tokens and PCM)"
        if not sensitive:
            detail += "; inconclusive: continuing without restore gave the same output"
        return (f"{'PASS' if exact and sensitive else 'FAIL'} fork: {detail}, snapshot {size_mb:.1f} MB, "
                f"CUDA graphs {'on' if graphs else 'off'}")

    def check_forcing() -> str:
        session(SEED + 2)
        return forcing_line(server, user, forced_audio)

    measured: list[tuple[int, float]] = []

    def batch_costs(widths: list[int]) -> None:
        """Prints ms per batched step at each width as it is measured, then the sessions one
        device holds at 1x real time."""
        fits = 0
        for n in widths:
            server.set_max_sessions(n)  # streams at width n, warmed up again
            models = [server.session_model(k) for k in range(n)]
            for k, model in enumerate(models):
                model.reset()
                model.start_session("lockstep", SEED + k, None)
            frames = min(args.batch_frames, len(user) - 4)
            for i in range(4):
                server.step_batch([(m, i, user[i], None) for m in models])
            sync()
            t0 = time.perf_counter()
            for i in range(4, 4 + frames):
                server.step_batch([(m, i, user[i], None) for m in models])
            sync()
            ms = 1000 * (time.perf_counter() - t0) / frames
            fits = n if ms <= 80.0 else fits
            measured.append((n, ms))
            print(f"INFO batched step: N={n}: {ms:.1f} ms per step of {n} sessions "
                  f"({n * 80.0 / ms:.1f}x real time together; {'fits' if ms <= 80.0 else 'does not fit'} "
                  f"in an 80 ms frame), CUDA graphs {'on' if graphs else 'off'}", flush=True)
        print(f"INFO sessions at 1x real time per device: {fits} (the widest N measured whose step fits a frame)")
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            for i in range(4, 4 + args.profile):
                server.step_batch([(m, i, user[i], None) for m in models])
            sync()
            profiler.disable()
            print(f"INFO profile of {args.profile} batched steps at N={widths[-1]} (own time, top 20):")
            pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(20)

    checks = () if args.batch_only else (("speed", check_speed), ("fork", check_fork),
                                         ("teacher forcing", check_forcing))
    failures = run_checks(checks)
    spec = args.batches or ("1,2,4" if args.tiny else "1,2,4,8,16,32")
    if spec != "none":
        try:
            batch_costs([int(n) for n in spec.split(",")])
        except Exception as exc:  # e.g. out of memory at a wide batch: the widths measured so far are printed
            print(f"INFO batched step: stopped: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    if measured and not args.batch_only:
        gpu = "CPU (tiny dry run)" if args.tiny else gpu_short_name(torch.cuda.get_device_name(0))
        memory = None if args.tiny else torch.cuda.max_memory_allocated() / 2**30
        what = ("the tiny config: a dry run of the script, not a figure" if args.tiny else
                f"full-size Moshi with random weights, CUDA graphs {'on' if graphs else 'off'}, ms per batched "
                f"step of N sessions; memory_gb: the peak at the widest N")
        failures += not print_block("moshi", "gpu_check_moshi.py", steps=measured, gpu=gpu, memory_gb=memory,
                                    what=what)
    if spec != "none" and not args.batch_only and not args.no_graph_pass and not os.environ.get("NO_CUDA_GRAPH"):
        del server
        if device == "cuda":
            torch.cuda.empty_cache()  # the child builds its own model on the same device
        print("INFO the same widths without CUDA graphs (a child process, NO_CUDA_GRAPH=1):", flush=True)
        child = [sys.executable, __file__, "--batch-only", "--batches", spec, "--batch-frames", str(args.batch_frames)]
        child += ["--tiny"] * args.tiny + ["--compile"] * args.compile
        import subprocess

        subprocess.run(child, env={**os.environ, "NO_CUDA_GRAPH": "1"}, check=False)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
