"""Does a golden cell hinge on tens of milliseconds of ASR or VAD timing? (issue 35, item 1)

`make reproduce` compares a run with golden cells whose values come from rules with sharp
edges: a word gap of at most 2 s, a reply begun within 5 s, speech at event start + 0.3 s.
When a stimulus puts an ASR word or a VAD edge within a few tens of milliseconds of such an
edge, the cell's value depends on the ASR's timing on that machine (Whisper's timestamps
move by ~20 ms between CPUs and library builds), and a clean clone can fail.

`timing_margin` re-scores a finished run with every ASR word time and every VAD episode
edge moved by a fixed shift (both later, both earlier, and the two opposite ways) and
compares each re-scored run with the golden files: a cell whose comparison status changes
under a shift sits within that shift of a rule boundary. Nothing is re-run: the scorers
read the cached transcripts and episodes (duplexeval/store.py) and the shift is applied on
top, through the two functions every scorer calls (`duplexeval.judges.asr.transcribe`,
`duplexeval.judges.vad_cache.cached_episodes`).

Re-scoring never touches the run: it happens in a scratch mirror whose files are symlinks
to the run's (the scorers write atomically, so a write replaces the link, never the file).
Judge verdicts: a judged text can change under a shift (a word moves into a window), so
the offline judges (free, local) are asked again (`read` mode); a run with any other judge
is re-scored in `replay` mode, and a verdict nobody has paid for stops that folder with an
error row instead of a call.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# (name, sign of the ASR shift, sign of the VAD shift): both later, both earlier, and apart.
SHIFTS: tuple[tuple[str, int, int], ...] = (
    ("later", 1, 1),
    ("earlier", -1, -1),
    ("asr-later-vad-earlier", 1, -1),
    ("asr-earlier-vad-later", -1, 1),
)
# The two shifts that move ASR and VAD apart: each direction of each once, at half the cost
# (what `reproduce` checks; every cell the four moved on the embedded run, issue 35, moved
# under one of these two).
APART = SHIFTS[2:]


@dataclass(frozen=True)
class Moved:
    """A golden cell whose comparison changed under one shift."""

    cell_id: str
    shift: str
    status: str          # under the run
    shifted_status: str  # under the shift
    got: float | None
    shifted_got: float | None

    def line(self) -> str:
        return (f"{self.cell_id}: {self.status} ({_num(self.got)}) -> {self.shifted_status} "
                f"({_num(self.shifted_got)}) with {self.shift}")


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _clamp(t: float, duration: float) -> float:
    return round(min(max(t, 0.0), duration), 3)


@contextmanager
def shifted_timings(asr_s: float, vad_s: float) -> Iterator[None]:
    """While active, every transcript's word times move by `asr_s` and every VAD episode's
    edges by `vad_s` (seconds, clamped to the audio), whatever the scorer asking."""
    import duplexeval.judges.asr as asr_mod
    import duplexeval.judges.vad_cache as vad_mod
    from duplexeval.judges.transcript import Transcript, Word
    from duplexeval.judges.vad_cache import ShiftedEpisode

    transcribe, cached_episodes = asr_mod.transcribe, vad_mod.cached_episodes

    def shifted_transcribe(audio: Any, rate: int, *args: Any, **kwargs: Any) -> Transcript:
        t = transcribe(audio, rate, *args, **kwargs)
        duration = len(audio) / float(rate)
        words = [Word(w.text, _clamp(w.start + asr_s, duration), _clamp(w.end + asr_s, duration)) for w in t.words]
        return Transcript(t.text, words, t.backend, t.model, from_cache=t.from_cache)

    def shifted_episodes(audio: Any, rate: int, *args: Any, **kwargs: Any) -> list[tuple[float, float]]:
        duration = len(audio) / float(rate)
        # each knows the edges the VAD found: a scorer cuts its ASR clip around those (vad_cache.asr_span)
        out = [ShiftedEpisode(_clamp(s + vad_s, duration), _clamp(e + vad_s, duration), heard=(s, e))
               for s, e in cached_episodes(audio, rate, *args, **kwargs)]
        return [ep for ep in out if ep[1] > ep[0]]

    asr_mod.transcribe, vad_mod.cached_episodes = shifted_transcribe, shifted_episodes  # type: ignore[assignment]
    try:
        yield
    finally:
        asr_mod.transcribe, vad_mod.cached_episodes = transcribe, cached_episodes  # type: ignore[assignment]


def judge_cache_mode(spec: dict[str, Any]) -> str:
    """`read` when every judge the benchmark names is the offline heuristic (asking it again
    is free), else `replay` (a verdict not in the cache is an error, never a paid call)."""
    from duplexeval.specs import Registry

    registry = Registry.load()
    for judge_id in (spec.get("judges") or {}).values():
        try:
            provider = registry.get("judge", str(judge_id)).data.get("provider")
        except Exception:  # noqa: BLE001 - an unknown judge is not known to be free
            return "replay"
        if provider != "offline":
            return "replay"
    return "read"


def _mirror_run(run_dir: Path, scratch: Path) -> Path:
    dest = scratch / run_dir.name
    shutil.copytree(run_dir, dest, symlinks=True,
                    copy_function=lambda src, dst: os.symlink(os.path.abspath(src), dst))
    return dest


def rescore_shifted(run_dir: Path, asr_s: float, vad_s: float, scratch: Path,
                    progress: Callable[[str], None] | None = None,
                    only: set[str] | None = None) -> tuple[Path, list[str]]:
    """A scratch mirror of `run_dir`, every folder (or the `only` ones, "<model>/<benchmark>";
    the others keep the run's results) re-scored under the shift; (mirror, errors)."""
    from duplexeval.benchmarks import benchmark_for
    from duplexeval.judges.cache import CacheMiss
    from duplexeval.runfolder.bench_folders import SPEC_SNAPSHOTS, bench_dirs, bench_spec_for
    from duplexeval.runs.statistics import write_statistics

    mirror = _mirror_run(run_dir, scratch)
    errors: list[str] = []
    with shifted_timings(asr_s, vad_s):
        for folder in bench_dirs(mirror):
            if only is not None and f"{folder.parent.name}/{folder.name}" not in only:
                continue
            spec = bench_spec_for(folder)
            snapshot = next((folder / n for n in SPEC_SNAPSHOTS if (folder / n).is_file()), None)
            family = benchmark_for(spec, snapshot or folder)
            if progress:
                progress(f"{folder.parent.name}/{folder.name}")
            try:
                family.score_dir(folder, spec, judge_cache_mode(spec))
            except CacheMiss as exc:
                errors.append(f"{folder.parent.name}/{folder.name}: needs judge verdicts the cache does not hold: "
                              f"{str(exc).splitlines()[0]}")
    if (run_dir / "statistics.json").exists():
        (mirror / "statistics.json").unlink()
        write_statistics(mirror)
    return mirror, errors


def _shifted_rows(run_dir: Path, golden_paths: list[Path], asr_s: float, vad_s: float, scratch: Path,
                  only: set[str] | None = None,
                  progress: Callable[[str], None] | None = None) -> tuple[list[tuple[str, str, float | None]], list[str]]:
    """One shift: the run re-scored in `scratch`, then every golden cell's (id, status, got)
    under it, and the folders that could not be re-scored. A top-level function, so that a
    worker process can run it (`timing_margin`'s `jobs`)."""
    from duplexeval.reports.compare import compare_run
    from duplexeval.reports.golden import load_golden
    from duplexeval.runfolder.run_dir import load_run

    mirror, errors = rescore_shifted(run_dir, asr_s, vad_s, scratch, progress=progress, only=only)
    shifted = load_run(mirror)
    rows = [(r.cell_id, r.status, r.got) for p in golden_paths for r in compare_run(shifted, load_golden(p))]
    shutil.rmtree(scratch, ignore_errors=True)
    return rows, errors


def timing_margin(run_dir: Path, golden_paths: list[Path], shift_s: float = 0.05,
                  shifts: tuple[tuple[str, int, int], ...] = SHIFTS,
                  progress: Callable[[str], None] | None = None,
                  only: set[str] | None = None, jobs: int = 1) -> dict[str, Any]:
    """Re-score `run_dir` under each shift; every golden cell whose comparison status moves.
    `only` limits the re-scoring to those "<model>/<benchmark>" folders. `jobs` > 1 re-scores
    that many shifts at once, each in its own process (the shifts share nothing but the
    run's files, which they only read; `reproduce --jobs 2` checks its two shifts side by
    side on two cores); then `progress` hears of each shift as it starts, not its folders.

    Returns {"moved": [Moved], "errors": [str], "compared": int}: `compared` counts the
    golden cells the run locates (each checked under every shift)."""
    from duplexeval.reports.compare import MISSING, compare_run
    from duplexeval.reports.golden import load_golden
    from duplexeval.runfolder.run_dir import load_run

    goldens = [load_golden(p) for p in golden_paths]
    base = {r.cell_id: r for g in goldens for r in compare_run(load_run(run_dir), g)}
    moved: list[Moved] = []
    errors: list[str] = []
    labels = {name: f"ASR {a * shift_s * 1000:+.0f} ms, VAD {v * shift_s * 1000:+.0f} ms" for name, a, v in shifts}
    with tempfile.TemporaryDirectory(prefix="duplexeval-timing-margin-") as tmp:
        args = {name: (run_dir, list(golden_paths), a * shift_s, v * shift_s, Path(tmp) / name, only)
                for name, a, v in shifts}
        if jobs > 1 and len(shifts) > 1:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            # spawn, as the local executor's workers: the driver may hold onnxruntime/torch threads
            with ProcessPoolExecutor(min(jobs, len(shifts)), mp_context=mp.get_context("spawn")) as pool:
                futures = {}
                for name in args:
                    if progress:
                        progress(f"{name}: {labels[name]}")
                    futures[name] = pool.submit(_shifted_rows, *args[name])
                results = {name: f.result() for name, f in futures.items()}
        else:
            results = {}
            for name in args:
                if progress:
                    progress(f"{name}: {labels[name]}")
                results[name] = _shifted_rows(*args[name], progress=(lambda m: progress(f"  {m}")) if progress else None)
        for name, (rows, errs) in results.items():
            errors += [f"{name}: {e}" for e in errs]
            for cell_id, status, got in rows:
                b = base.get(cell_id)
                if b is not None and b.status != status:
                    moved.append(Moved(cell_id, labels[name], b.status, status, b.got, got))
    located = [r for r in base.values() if r.status != MISSING]
    return {"moved": moved, "errors": errors, "compared": len(located)}
