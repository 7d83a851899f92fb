"""Scoring a Full-Duplex-Bench v1.5 model x task folder: one record per sample pair, then the task's numbers.

Each v1.5 sample was played twice (benchmarks/fdb/plan.py): item `<id>` heard input.wav (the
turn with its overlap), item `<id>.clean` heard clean_input.wav. A pair is scored only when
both playbacks are ok: a missing or failed clean twin makes the sample an `error` record
naming the twin, never a score. The clean item itself gets a marker record (role "clean"),
so every planned item has a record.

Per pair, as the authors' pipeline reads its folder (docs/fdb.md, "v1.5"):
- timing (v15_timing): Silero intervals of what the model heard (input.wav) and what it
  said (output.wav, the model channel cut to the input's length), merged per speaker;
  stop and response intervals;
- words: the spec's ASR of all four streams (input, clean input, output, clean output);
- behaviour (v15_behavior): the judge reads the four word-timed transcripts and gives one
  tag; a reply with no known tag makes the record an `error` with the judge's reason;
- adaptation (v15_adaptation): the model's output split at its words around the overlap's
  end (metadata.json timestamps[1]); speaking rate and intensity of "pre", "post" and the
  clean reply.

The task's numbers: stop and response latency means (pooled as the spec's reading says),
each tag's share of the judged samples, each side's trimmed mean of each measure, and the
paired tests (v15_stats) over the samples the spec's tested behaviour selects. Pitch and
UTMOS are not computed here (their packages are not in this project): results.json says so
under `not_computed`, never with a number.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from duplexeval.audio import read_stereo_recording
from duplexeval.benchmarks.bench_folder import item_statuses, score_bench_folder
from duplexeval.benchmarks.fdb import v15_adaptation as adapt, v15_behavior as behavior, v15_stats as stats
from duplexeval.benchmarks.fdb.layout import Word
from duplexeval.benchmarks.fdb.samples import SAMPLES_FILE
from duplexeval.benchmarks.fdb.score_common import RESULTS_VERSION, asr_words, not_ok_reason
from duplexeval.benchmarks.fdb.v15_timing import sample_timing
from duplexeval.io import sha256_file

SIDES = ("pre", "post", "clean")
TAG_METRIC = {"C_RESPOND": "respond_ratio", "C_RESUME": "resume_ratio",
              "C_UNCERTAIN_HANDLING": "uncertain_ratio", "C_UNKNOWN": "unknown_ratio"}
NOT_COMPUTED = {
    "pitch": "not computed: their code runs librosa's pYIN, which is not in this project's lock (docs/fdb.md, 'v1.5')",
    "utmos": "not computed: UTMOSv2 (a neural MOS predictor) is not installable here (docs/fdb.md, 'v1.5')",
}


def _silent(audio: np.ndarray, bench: dict[str, Any]) -> bool:
    return len(audio) == 0 or float(np.max(np.abs(audio))) < float(bench["options"]["silence_floor"])


def speech(audio: np.ndarray, rate: int, vad: dict[str, Any], bench: dict[str, Any], scorer: str) -> list[tuple[float, float]]:
    """Silero intervals (seconds, unrounded) with the given parameters; none for digital silence."""
    if _silent(audio, bench):
        return []
    from duplexeval.judges.vad import vad_hysteresis
    from duplexeval.judges.vad_cache import cached_episodes

    return cached_episodes(audio, rate, threshold=float(vad["threshold"]), min_speech_ms=float(vad["min_speech_ms"]),
                           merge_gap_ms=float(vad["min_silence_ms"]), mode="offline",
                           hysteresis=vad_hysteresis(bench["vad"]), scorer=scorer, speech_pad_ms=int(vad["pad_ms"]))


def words(audio: np.ndarray, rate: int, bench: dict[str, Any], calls: Counter) -> list[Word]:
    return [Word(w.text, w.start, w.end) for w in asr_words(audio, rate, 0.0, bench, calls)]


def _play(recording: Path, duration_s: float) -> tuple[np.ndarray, np.ndarray, int]:
    """(what the model heard, what it said, rate), both cut to the input's length."""
    heard, said, rate = read_stereo_recording(recording)
    n = int(round(duration_s * rate))
    return heard[:n], said[:n], rate


def _text(ws: list[Word]) -> str:
    return " ".join(w.text for w in ws)


def adaptation(said: np.ndarray, said_words: list[Word], clean: np.ndarray, clean_words: list[Word], rate: int,
               overlap_end: float, bench: dict[str, Any]) -> dict[str, Any]:
    """The split and the three sides' measures (None: a side without audio, as their code records nothing)."""
    cfg = bench["options"]["v15"]["adaptation"]
    duration = len(said) / rate
    split = adapt.split_time(overlap_end, said_words, duration)
    pre_w, post_w = adapt.partition(said_words, split)
    parts = {"pre": (adapt.slice_audio(said, rate, 0.0, split), pre_w),
             "post": (adapt.slice_audio(said, rate, split, duration), post_w), "clean": (clean, clean_words)}
    sides: dict[str, Any] = {}
    for side, (audio, ws) in parts.items():
        seg = adapt.measure(audio, rate, ws, speech(audio, rate, cfg["vad"], bench, "fdb-v15-trim"),
                            frame_s=float(cfg["frame_s"]))
        sides[side] = seg.to_json() if seg else None
    return {"split_s": round(split, 6), "sides": sides}


def judge_inputs(heard: list[Word], clean_heard: list[Word], said: list[Word], clean_said: list[Word],
                 overlap_start: float, overlap_text: str) -> dict[str, Any]:
    """The four transcripts as the judge reads them, plus what an offline stand-in compares
    (the model's words from the overlap's start on, against the overlap's text and the clean reply).

    Each transcript is the whole ASR file as their eval_behavior.py reads it ({"text", "chunks"},
    the shape of their output.json), as compact JSON."""
    from duplexeval.benchmarks.fdb.layout_export import asr_json

    payload = {key: asr_json([(w.text, w.start, w.end) for w in ws]) for key, ws in
               zip(behavior.INPUT_KEYS, (clean_heard, heard, clean_said, said))}
    after = [w for w in said if (w.end if w.end is not None else w.start) > overlap_start]
    return {**{k: behavior.compact(v) for k, v in payload.items()}, "transcript": _text(after),
            "references": {"C_RESPOND": overlap_text, "C_RESUME": _text(clean_said)}}


def score_pair(item_id: str, info: dict[str, Any], recording: Path, clean_recording: Path, bench: dict[str, Any],
               judge: Any, calls: Counter) -> dict[str, Any]:
    v15 = bench["options"]["v15"]
    meta = info["annotation"]
    heard, said, rate = _play(recording, float(info["input_duration_s"]))
    clean_heard, clean_said, crate = _play(clean_recording, float(info["clean_input_duration_s"]))
    if crate != rate:
        return {"item": item_id, "outcome": "error", "reason": f"clean twin recorded at {crate} Hz, the sample at {rate} Hz"}
    timing_cfg = v15["timing"]
    timing = sample_timing(speech(heard, rate, timing_cfg["vad"], bench, "fdb-v15-timing"),
                           speech(said, rate, timing_cfg["vad"], bench, "fdb-v15-timing"),
                           user_gap_s=float(timing_cfg["user_merge_gap_s"]),
                           model_gap_s=float(timing_cfg["model_merge_gap_s"]))
    w = {name: words(audio, rate, bench, calls) for name, audio in
         (("input", heard), ("clean_input", clean_heard), ("output", said), ("clean_output", clean_said))}
    rec: dict[str, Any] = {
        "item": item_id, "outcome": "ok", "task": "overlap", "role": "pair",
        "clean_item": item_id + v15["clean_suffix"], "overlap_s": list(meta["timestamps"]),
        "recording_sha256": sha256_file(recording), "clean_recording_sha256": sha256_file(clean_recording),
        "timing": {"user": [list(i) for i in timing.user], "model": [list(i) for i in timing.model], **timing.to_json()},
        "stop_latencies_s": timing.stop_latencies, "response_latencies_s": timing.response_latencies,
        "words": {k: [[x.text, x.start, x.end] for x in v] for k, v in w.items()},
        "adaptation": adaptation(said, w["output"], clean_said, w["clean_output"], rate,
                                 float(meta["timestamps"][1]), bench),
        "overlapping_words": behavior.words_overlap(w["input"], w["output"])}
    inputs = judge_inputs(w["input"], w["clean_input"], w["output"], w["clean_output"],
                          float(meta["timestamps"][0]), str(meta["current_turn_text"]))
    calls["judge"] += 1
    v = judge.decide(inputs, {"recording": str(recording), "clean_recording": str(clean_recording)})
    rec.update(judge=judge.id, judge_label=judge.label, verdict_key=v.cache_key)
    if not (v.parsed_ok and v.value in behavior.TAGS):
        return {**rec, "outcome": "error", "behaviour": None,
                "reason": f"judge {judge.id}: verdict {v.value!r} is not one of {', '.join(behavior.TAGS)} ({v.reason})"}
    rec.update(behaviour=v.value, behaviour_reason=v.reason)
    return rec


def _metric(total: float, n: int, unit: str, note: str) -> dict[str, Any]:
    return {"value": total / n if n else None, "numerator": total, "denominator": n, "unit": unit, "note": note}


def task_metrics(pairs: list[dict[str, Any]], bench: dict[str, Any], engine: str) -> dict[str, Any]:
    """The task's numbers over its ok pairs, each value/numerator/denominator with the ASR engine noted."""
    v15 = bench["options"]["v15"]
    pool = v15["latency_pool"]
    out: dict[str, Any] = {}
    for name, key in (("stop_latency_s", "stop_latencies_s"), ("response_latency_s", "response_latencies_s")):
        vals = [x for r in pairs for x in (r[key] if pool == "every-interval" else r[key][:1])]
        out[name] = _metric(float(sum(vals)), len(vals), "seconds",
                            f"mean over {pool} of {len(pairs)} samples (VAD intervals; ASR {engine} not used)")
    for ratio in behavior.ratios([r["behaviour"] for r in pairs]):
        out[TAG_METRIC[ratio.tag]] = {"value": ratio.value, "numerator": ratio.numerator,
                                      "denominator": ratio.denominator, "unit": "fraction",
                                      "note": f"share of judged samples (judge {bench['judges']['behaviour']}; ASR {engine})"}
    cfg = v15["adaptation"]
    for measure in v15["measures"]:
        for side in ("pre", "post"):
            values = [(r["adaptation"]["sides"][side] or {}).get(measure) for r in pairs]
            mean, kept, given = adapt.trimmed_mean(values, percentile=float(cfg["trim_percentile"]),
                                                   min_values=int(cfg["trim_min_values"]))
            total = mean * kept if mean is not None else 0.0
            out[f"{measure}_{side}"] = {**_metric(total, kept, UNITS[measure], ""), "value": mean,
                                        "note": f"trimmed mean: {kept} of {given} values kept (ASR {engine})"}
    return out


UNITS = {"wpm": "words_per_minute", "speech_dur_s": "seconds", "mean_intensity": "dB", "std_intensity": "dB"}


# The measures of the authors' README command for significance_test.py that are computed here.
README_TEST_MEASURES = ("wpm", "mean_intensity", "std_intensity")


def paired_tests(pairs: list[dict[str, Any]], bench: dict[str, Any]) -> dict[str, Any]:
    v15 = bench["options"]["v15"]
    measures = [m for m in v15["measures"]
                if v15["test_measures"] == "every-measure" or m in README_TEST_MEASURES]
    chosen = [r for r in pairs if r["behaviour"] == v15["tested_behaviour"] and stats.eligible(
        stats.TESTED_BEHAVIOUR, {s: v for s, v in r["adaptation"]["sides"].items() if v is not None})]
    sides: dict[str, dict[str, Sequence[float | None]]] = {
        side: {str(m): [(r["adaptation"]["sides"][side] or {}).get(m) for r in chosen] for m in measures}
        for side in SIDES}
    tests, skipped = stats.run_tests(sides, measures)
    return {"samples": [r["item"] for r in chosen], "measures": measures, "tests": [
        {**t.__dict__, "ci95": list(t.ci95)} for t in tests], "not_run": skipped}


def aggregate(records: list[dict[str, Any]], bench: dict[str, Any], counts: dict[str, int],
              calls: Counter) -> dict[str, Any]:
    from duplexeval.judges.asr import asr_config

    cfg = asr_config(bench["asr"])
    engine = f"{cfg['backend']}:{cfg['model']}"
    pairs = [r for r in records if r.get("role") == "pair" and r["outcome"] == "ok"]
    errors = [r["item"] for r in records if r["outcome"] != "ok"]
    return {"v": RESULTS_VERSION, "benchmark": bench["id"], "dimension": bench["dimension"], "task": "overlap",
            "subset": bench["options"]["subset"], "items": counts, "samples_scored": len(pairs),
            "complete": not errors, **({"not_ok_items": errors} if errors else {}),
            "metrics": task_metrics(pairs, bench, engine), "paired_tests": paired_tests(pairs, bench),
            "not_computed": NOT_COMPUTED,
            "asr": {"backend": cfg["backend"], "model": cfg["model"], "options": bench["asr"].get("options", {})},
            "asr_engine": engine, "vad": bench.get("vad"), "judges": dict(sorted(bench.get("judges", {}).items())),
            "calls": {"asr_requests": calls["asr"], "judge_requests": calls["judge"]}}


def behaviour_judge(bench: dict[str, Any], cache_mode: str) -> Any:
    from duplexeval.judges.cache import JudgeCache
    from duplexeval.judges.llm import Judge
    from duplexeval.specs import Registry

    spec = Registry.load().get("judge", bench["judges"]["behaviour"])
    return Judge.from_spec(spec.data, spec.path, JudgeCache(mode=cache_mode))  # type: ignore[arg-type]


def score_v15_dir(bench_dir: Path, bench: dict[str, Any], cache_mode: str = "readwrite", *,
                  progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
    """Scores every pair samples.json lists; writes records.jsonl and results.json."""
    suffix = bench["options"]["v15"]["clean_suffix"]
    info = {s["id"]: s for s in json.loads((bench_dir / SAMPLES_FILE).read_text("utf-8"))["samples"]}
    planned = [i for sid in info for i in (sid, sid + suffix)]
    statuses = item_statuses(bench_dir, planned, unplanned_folders=False)
    status_of = {d.name: st for d, st in statuses}
    judge = behaviour_judge(bench, cache_mode)
    calls: Counter = Counter()

    def score_ok(d: Path) -> list[dict[str, Any]]:
        if d.name.endswith(suffix) and d.name[:-len(suffix)] in info:
            return [{"item": d.name, "outcome": "ok", "role": "clean", "pair": d.name[:-len(suffix)]}]
        twin = d.name + suffix
        if status_of.get(twin) != "ok":
            why = not_ok_reason(d.parent / twin, status_of.get(twin, "missing"))
            return [{"item": d.name, "outcome": "error", "role": "pair", "status": "ok",
                     "reason": f"clean twin {twin} is not ok ({why}): the pair cannot be scored"}]
        return [score_pair(d.name, info[d.name], d / "recording.wav", d.parent / twin / "recording.wav",
                           bench, judge, calls)]

    def score_not_ok(d: Path, status: str) -> list[dict[str, Any]]:
        role = "clean" if d.name.endswith(suffix) else "pair"
        return [{"item": d.name, "outcome": "error", "role": role, "status": status, "reason": not_ok_reason(d, status)}]

    return score_bench_folder(bench_dir, statuses, score_ok=score_ok, score_not_ok=score_not_ok,
                              aggregate=lambda records, counts: aggregate(records, bench, counts, calls),
                              progress=progress)
