"""Benchmark (not a timed test): where one `duplexeval run` job spends its wall time, by stage.

`make reproduce` is a loop over (model x benchmark) jobs; to cut its wall time one must know
which stage of a job dominates. This script runs the chosen jobs in this process on the
serial executor (so every stage is visible to one timer) and wraps the stage entry points
with wall-clock timers that count *exclusive* time: a stage nested in another (the live
VAD of the MPE scheduler inside a session, the model load inside an ASR call) is
subtracted from its parent, so the rows add up to the total.

Stages:
  session        the lockstep loop against the model server (harness + waiting on the model;
                 the model itself runs in its own process, so its compute shows up here)
  model-start    starting a model server (ModelHost.ensure)
  stimulus       building a unit's stimulus other than TTS (scene rendering, mixing)
  tts            duplexeval.tts.synthesize (flite or the cache)
  vad-live       Silero in the MPE scheduler, inside a session (StreamingVAD.push)
  vad-score      Silero while scoring (detect_episodes / speech_probabilities); near 0 for a
                 Duplex-MPE job whose live streams it replays (duplexeval.judges.vad)
  asr            the ASR backend's own inference (FasterWhisperBackend.transcribe etc.)
  asr-load       loading the Whisper weights (once per process)
  asr-cache      duplexeval.judges.asr.transcribe minus the backend: resampling, hashing, cache I/O
  judge          Judge.decide (offline or LLM judges, with their cache)
  spec-load      Registry.load (every spec file parsed and checked)
  write          writing an item's recording and events (write_item)
  score-other    the rest of scoring (reading recordings, rules, records, results)
  text-reference Duplex-MPE's text-only reference row
  other          everything else (planning, manifest, imports after start-up)

Usage (pick a fresh cache to measure a first run; reuse one to measure a rerun):
  DUPLEXEVAL_CACHE=/tmp/c .venv/bin/python bench/bench_reproduce.py \
      --models babbler --benchmarks mpe-explicit --limit 4 --runs-dir /tmp/bench-runs
Timing on a shared machine is noisy: compare figures taken in one invocation.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class StageClock:
    """Exclusive wall time per stage: entering a stage pauses the one it is nested in."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._stack: list[list[Any]] = []  # [stage, started_at]

    def enter(self, stage: str) -> None:
        now = time.perf_counter()
        if self._stack:
            outer = self._stack[-1]
            self.seconds[outer[0]] += now - outer[1]
        self._stack.append([stage, now])
        self.calls[stage] += 1

    def leave(self) -> None:
        now = time.perf_counter()
        stage, started = self._stack.pop()
        self.seconds[stage] += now - started
        if self._stack:
            self._stack[-1][1] = now

    def inside(self, stage: str) -> bool:
        return any(s == stage for s, _ in self._stack)


def _wrap(clock: StageClock, fn: Callable, stage: str | Callable[[], str]) -> Callable:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        clock.enter(stage() if callable(stage) else stage)
        try:
            return fn(*args, **kwargs)
        finally:
            clock.leave()

    timed.__wrapped_stage__ = True  # type: ignore[attr-defined]
    return timed


def _patch(clock: StageClock, owner: Any, name: str, stage: str | Callable[[], str],
           wrap: Callable[[Callable], Callable] | None = None) -> None:
    """Wraps owner.name, and every module-level alias of it (`from x import name` copies)."""
    original = getattr(owner, name)
    if getattr(original, "__wrapped_stage__", False):
        return
    timed = _wrap(clock, wrap(original) if wrap else original, stage)
    setattr(owner, name, timed)
    if isinstance(owner, type):
        return
    for module in list(sys.modules.values()):
        if module is None or not getattr(module, "__name__", "").startswith("duplexeval"):
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                setattr(module, attr, timed)


def instrument(clock: StageClock) -> None:
    """Installs the stage timers (imports the modules they live in first)."""
    import duplexeval.benchmarks.mpe.plan as mpe_plan
    import duplexeval.benchmarks.mpe.plugin as mpe_plugin
    import duplexeval.benchmarks.mtr.plan as mtr_plan
    import duplexeval.commands.run  # noqa: F401  (imports what the run will use, so aliases get patched)
    import duplexeval.executors.base as base
    import duplexeval.judges.asr as asr
    import duplexeval.judges.llm as llm
    import duplexeval.judges.vad as vad
    import duplexeval.runner.fork as fork
    import duplexeval.runner.items as items
    import duplexeval.specs.registry as registry
    import duplexeval.tts as tts
    from duplexeval.judges.asr_backends.faster_whisper_backend import FasterWhisperBackend

    _patch(clock, registry.Registry, "load", "spec-load")
    _patch(clock, tts, "synthesize", "tts")
    _patch(clock, items, "play_item", "session", wrap=_timed_factory(clock))
    _patch(clock, fork, "play_group", "session")
    _patch(clock, items.ModelHost, "ensure", "model-start")
    _patch(clock, items, "write_item", "write")
    _patch(clock, vad.StreamingVAD, "push", lambda: "vad-live" if clock.inside("session") else "vad-score")
    _patch(clock, vad, "speech_probabilities", "vad-score")
    _patch(clock, asr, "transcribe", "asr-cache")
    # The offline default (the embedded suite's ASR); other backends' time counts as asr-cache.
    _patch(clock, FasterWhisperBackend, "transcribe", "asr")
    _patch(clock, FasterWhisperBackend, "_load", "asr-load")
    _patch(clock, llm.Judge, "decide", "judge")
    try:
        from duplexeval.judges.offline import OfflineJudge

        _patch(clock, OfflineJudge, "decide", "judge")
    except ImportError:
        pass
    _patch(clock, mpe_plan.MpePlan, "score", "score-other")
    _patch(clock, mtr_plan.MtrPlan, "score", "score-other")
    _patch(clock, mpe_plugin.DuplexMpe, "after_run", "text-reference")  # the text-only reference row
    _patch(clock, base.JobPlan, "groups", "stimulus")  # MTR builds its rounds (and scores the reference) here


def _timed_factory(clock: StageClock) -> Callable[[Callable], Callable]:
    """Stimulus factories are closures built per unit: play_item times the call of each one."""

    def wrap(play_item: Callable) -> Callable:
        @functools.wraps(play_item)
        def timed(host: Any, out: Any, item_id: str, factory: Callable, *args: Any, **kwargs: Any) -> Any:
            return play_item(host, out, item_id, _wrap(clock, factory, "stimulus"), *args, **kwargs)

        return timed

    return wrap


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default="embedded")
    ap.add_argument("--models", required=True)
    ap.add_argument("--benchmarks", required=True)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--runs-dir", type=Path, default=Path("/tmp/bench-reproduce-runs"))
    ap.add_argument("--run-id", default="bench")
    ap.add_argument("--keep", action="store_true", help="Keep (resume) an existing run folder.")
    ap.add_argument("--rescore", action="store_true",
                    help="Then resume the finished run twice (only scoring is redone): with no VAD reuse, "
                         "and with the MPE episodes cache, side by side.")
    args = ap.parse_args(argv)

    clock = StageClock()
    t0 = time.perf_counter()
    instrument(clock)
    t_import = time.perf_counter() - t0
    run_dir = args.runs_dir / args.run_id
    if run_dir.exists() and not args.keep:
        shutil.rmtree(run_dir)
    from duplexeval.commands.run import run_suite

    def split(value: str) -> list[str]:
        return [x.strip() for x in value.split(",") if x.strip()]

    def run(label: str) -> None:
        clock.seconds.clear()
        clock.calls.clear()
        clock.enter("other")
        t1 = time.perf_counter()
        run_suite(args.suite, models=split(args.models), benchmarks=split(args.benchmarks), run_id=args.run_id,
                  runs_dir=args.runs_dir, limit=args.limit, clock=None)
        clock.leave()
        total = time.perf_counter() - t1
        print(f"\n{label}: {args.models} x {args.benchmarks} (limit {args.limit}): {total:.1f} s wall")
        for stage, secs in sorted(clock.seconds.items(), key=lambda kv: -kv[1]):
            print(f"  {stage:15s} {secs:7.2f} s  {100 * secs / total:5.1f} %  ({clock.calls[stage]} calls)")

    print(f"({t_import:.1f} s of imports before the run)")
    run("run")
    if args.rescore:
        import duplexeval.benchmarks.mpe.score as mpe_score
        import duplexeval.judges.vad as vad

        # Pass 1 scores as before either reuse existed: no episodes cache, no live streams
        # to replay (its vad-score row is what the first run's live reuse saved, for models
        # at the benchmark's rate). Pass 2 reads the episodes cache.
        cached = mpe_score.model_episodes
        mpe_score.model_episodes = functools.partial(cached, cache=False)  # type: ignore[assignment]
        vad._recent.clear()
        run("re-score, no VAD reuse (episodes cache off, no live streams)")
        mpe_score.model_episodes = cached  # type: ignore[assignment]
        run("re-score, MPE VAD episodes cache on")


if __name__ == "__main__":
    main()
