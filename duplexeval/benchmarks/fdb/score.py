"""Scoring a Full-Duplex-Bench v1.0 model x task folder: one record per sample, then the task's means.

What the authors' pipeline reads of a sample is the model's output.wav, time-synchronous with
input.wav, and output.json, the word-level ASR of it. Here output.wav is the model's channel
of recording.wav, cut to the input's length or as recorded (the reading options.output_length;
their inference scripts write it at any length and rate); its words come from the spec's
ASR (every record and results.json name the engine, since the ASR moves these scores). For a
user interruption the ASR hears only what follows the end of the interruption, its times put
back on the recording's axis, as the authors' transcription script does. The rules themselves
are pure functions in benchmarks/fdb/metrics.py; docs/fdb.md cites each one's source.

A metric is a mean over samples, written as {value, numerator (the sum), denominator (the
samples it averages)}; an item that is not ok is an error record, left out of every mean and
counted (`complete: false`).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import numpy as np

from duplexeval.audio import read_stereo_recording
from duplexeval.benchmarks.bench_folder import item_statuses, score_bench_folder
from duplexeval.benchmarks.fdb import metrics as m
from duplexeval.benchmarks.fdb.samples import SAMPLES_FILE
from duplexeval.benchmarks.fdb.score_common import RESULTS_VERSION, asr_words, not_ok_reason
from duplexeval.io import sha256_file

Words = list[Any]


SILERO_RATE = 16000


def _segments(audio: np.ndarray, rate: int, bench: dict[str, Any]) -> list[tuple[float, float]]:
    """Silero's segments with its own defaults as the authors call it (pad, times rounded to
    options.backchannel.vad_time_decimals), through the shared VAD cache.

    Two readings decide what Silero hears and how its times end (docs/fdb.md, "Readings"):
    `vad_rate: assume-16k` hands it the file's samples as if they were 16 kHz (the authors'
    call passes no sampling_rate), so its times are in 16 kHz samples of a file at `rate`;
    `vad_end_clamp: clamp-to-end` clamps a rounded end to the audio's length as Silero's
    return_seconds does."""
    vad, opts = bench["vad"], bench["options"]["backchannel"]
    if len(audio) == 0 or float(np.max(np.abs(audio))) < float(bench["options"]["silence_floor"]):
        return []
    from duplexeval.judges.vad import vad_hysteresis
    from duplexeval.judges.vad_cache import cached_episodes

    told = SILERO_RATE if opts.get("vad_rate", "true-rate") == "assume-16k" else rate
    eps = cached_episodes(audio, told, threshold=float(vad["threshold"]), min_speech_ms=float(vad["min_speech_ms"]),
                          merge_gap_ms=float(vad["merge_gap_ms"]), mode="offline", hysteresis=vad_hysteresis(vad),
                          scorer="fdb-backchannel", speech_pad_ms=int(opts["vad_pad_ms"]))
    d = int(opts["vad_time_decimals"])
    segments = [(round(s, d), round(e, d)) for s, e in eps]
    if opts.get("vad_end_clamp", "none") == "clamp-to-end":
        length_s = len(audio) / told
        segments = [(s, min(e, length_s)) for s, e in segments]
    return segments


def output_channel(model: np.ndarray, rate: int, input_duration_s: float, bench: dict[str, Any]) -> np.ndarray:
    """output.wav as the reading `options.output_length` takes it: cut to the input's length
    (cut-to-input) or the whole channel as recorded (as-recorded, the authors' scripts)."""
    if bench["options"].get("output_length", "cut-to-input") == "as-recorded":
        return model
    return model[:int(round(float(input_duration_s) * rate))]


def _words_json(words: Words) -> list[list[Any]]:
    return [[w.text, w.start, w.end] for w in words]


def turn_rule(bench: dict[str, Any]) -> m.TurnRule:
    t = bench["options"]["turn"]
    return m.TurnRule(float(t["min_span_s"]), int(t["max_short_words"]))


def anchor_s(task: str, annotation: Any) -> float:
    """Where a task's latency is measured from: smooth turn-taking, the first timestamp of
    turn_taking.json (where the real next speaker began); user interruption, the second of
    interrupt.json (the interruption's end, also where its ASR starts listening); 0 otherwise."""
    if task == "smooth-turn-taking":
        return float(annotation[0]["timestamp"][0])
    if task == "user-interruption":
        return float(annotation[0]["timestamp"][1])
    return 0.0


def score_sample(item_id: str, info: dict[str, Any], recording: Path, bench: dict[str, Any],
                 judges: dict[str, Any], calls: Counter) -> dict[str, Any]:
    opts, task = bench["options"], bench["options"]["task"]
    _, model, rate = read_stereo_recording(recording)
    out = output_channel(model, rate, info["input_duration_s"], bench)
    duration = len(out) / rate
    rec: dict[str, Any] = {"item": item_id, "outcome": "ok", "task": task, "output_duration_s": round(duration, 6),
                           "recording_sha256": sha256_file(recording)}
    if task == "backchannel":
        rule = m.BackchannelRule(**{k: opts["backchannel"][k] for k in
                                    ("long_segment_s", "max_words", "short_segment_s", "max_short_words")})
        segments = _segments(out, rate, bench)
        words = asr_words(out, rate, 0.0, bench, calls)
        o = m.backchannel_outcome(segments, words, rule, opts["backchannel"]["tor"])
        bc = opts["backchannel"]
        jsd = m.backchannel_jsd(o.backchannels, duration, info["reference"], bin_s=float(bc["bin_s"]),
                                epsilon=float(bc["epsilon"]), none_value=float(bc["no_backchannel_jsd"]),
                                form=bc["jsd"])
        return {**rec, "took_turn": o.took_turn, "backchannels": [list(b) for b in o.backchannels],
                "frequency": m.backchannel_frequency(o.backchannels, duration), "jsd": jsd,
                "segments": o.decisions, "words": _words_json(words)}
    anchor = anchor_s(task, info["annotation"])
    if task == "user-interruption":
        start = int(anchor * rate)   # the ASR hears only what follows the interruption
        words = asr_words(out[start:], rate, start / rate, bench, calls)
    else:
        words = asr_words(out, rate, 0.0, bench, calls)
    took = m.takes_turn(words, turn_rule(bench))
    rec.update(took_turn=took, words_span_s=round(m.words_span(words), 6), n_words=len(words),
               transcript=" ".join(w.text for w in words), words=_words_json(words))
    if task == "pause":
        return rec
    rec["anchor_s"] = anchor
    rec["latency_s"] = m.latency(words, anchor, opts["latency_negative"]) if took else None
    if task == "user-interruption":
        rec["relevance"] = relevance(judges, bench, info, rec, recording, calls) if took else None
        rec.update(judge_fields(rec["relevance"]))
    return rec


def judge_fields(rel: dict[str, Any] | None) -> dict[str, Any]:
    """The judge's id, label and verdict key at the record's top level, where `duplexeval verify`
    looks for the cached verdicts a record cites (none when nothing was judged)."""
    return {k: rel[k] for k in ("judge", "judge_label", "verdict_key")} if rel else {}


def relevance(judges: dict[str, Any], bench: dict[str, Any], info: dict[str, Any], rec: dict[str, Any],
              recording: Path, calls: Counter) -> dict[str, Any]:
    """The judge's 0-5 rating of the reply after the interruption; off the spec's scale is unparseable."""
    judge = judges["relevance"]
    ann = info["annotation"][0]
    inputs = {"context": ann["context"], "user_turn": ann["interrupt"], "transcript": rec["transcript"]}
    calls["judge"] += 1
    v = judge.decide(inputs, {"recording": str(recording)})
    scale = bench["options"]["relevance"]
    value = v.value
    on_scale = (isinstance(value, (int, float)) and not isinstance(value, bool)
                and scale["min"] <= value <= scale["max"]
                and abs((value - scale["min"]) / scale["step"] - round((value - scale["min"]) / scale["step"])) < 1e-9)
    ok = bool(v.parsed_ok and on_scale)
    return {"judge": judge.id, "judge_label": judge.label, "rating": value if ok else None, "parsed_ok": ok,
            "reason": v.reason if ok else f"verdict {value!r} is not on the scale {scale}", "verdict_key": v.cache_key}


def _mean(values: list[float]) -> dict[str, Any]:
    total = float(sum(values))
    return {"value": total / len(values) if values else None, "numerator": total, "denominator": len(values)}


def _rate(flags: list[bool]) -> dict[str, Any]:
    k = sum(1 for f in flags if f)
    return {"value": k / len(flags) if flags else None, "numerator": k, "denominator": len(flags)}


def task_metrics(records: list[dict[str, Any]], task: str) -> dict[str, Any]:
    """The task's means over its ok samples (the published table's cells)."""
    ok = [r for r in records if r["outcome"] == "ok"]
    out: dict[str, Any] = {"tor": _rate([bool(r["took_turn"]) for r in ok])}
    if task == "backchannel":
        out["frequency"] = _mean([float(r["frequency"]) for r in ok])
        out["jsd"] = _mean([float(r["jsd"]) for r in ok])
    if task in ("smooth-turn-taking", "user-interruption"):
        out["latency_s"] = _mean([float(r["latency_s"]) for r in ok if r.get("latency_s") is not None])
    if task == "user-interruption":
        judged = [r["relevance"] for r in ok if r.get("relevance")]
        rated = [float(j["rating"]) for j in judged if j["parsed_ok"]]
        out["relevance"] = {**_mean(rated), "unparseable": len(judged) - len(rated)}
    return out


UNITS = {"tor": "fraction", "frequency": "per_second", "jsd": "score", "latency_s": "seconds", "relevance": "score"}


def labelled(metrics: dict[str, Any], engine: str) -> dict[str, Any]:
    """Each metric with its unit and a note naming the ASR engine its words came from, so the
    engine travels with the number into every table and export."""
    out = {}
    for name, metric in metrics.items():
        note = f"ASR {engine}" if metric["denominator"] else f"no sample to average (ASR {engine})"
        out[name] = {**metric, "unit": UNITS[name], "note": note}
    return out


def aggregate(records: list[dict[str, Any]], bench: dict[str, Any], counts: dict[str, int],
              calls: Counter) -> dict[str, Any]:
    from duplexeval.judges.asr import asr_config

    cfg = asr_config(bench["asr"])
    engine = f"{cfg['backend']}:{cfg['model']}"
    errors = [r["item"] for r in records if r["outcome"] != "ok"]
    return {"v": RESULTS_VERSION, "benchmark": bench["id"], "dimension": bench["dimension"],
            "task": bench["options"]["task"], "subset": bench["options"]["subset"], "items": counts,
            "complete": not errors, **({"not_ok_items": errors} if errors else {}),
            "metrics": labelled(task_metrics(records, bench["options"]["task"]), engine),
            "asr": {"backend": cfg["backend"], "model": cfg["model"], "options": bench["asr"].get("options", {})},
            "asr_engine": engine,
            "vad": bench.get("vad"), "judges": dict(sorted(bench.get("judges", {}).items())),
            "calls": {"asr_requests": calls["asr"], "judge_requests": calls["judge"]}}


def judges_for(bench: dict[str, Any], cache_mode: str) -> dict[str, Any]:
    if bench["options"]["task"] != "user-interruption":
        return {}
    from duplexeval.benchmarks.fdb.authors_judge import judge_from_spec
    from duplexeval.judges.cache import JudgeCache
    from duplexeval.specs import Registry

    # judges.relevance is a reading (docs/fdb.md): the authors' judge reads their prompt at run time.
    spec = Registry.load().get("judge", bench["judges"]["relevance"])
    return {"relevance": judge_from_spec(spec.data, spec.path, JudgeCache(mode=cache_mode))}  # type: ignore[arg-type]


def score_bench_dir(bench_dir: str | Path, bench: dict[str, Any], cache_mode: str = "readwrite", *,
                    progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
    """Scores every sample samples.json lists; writes records.jsonl and results.json."""
    bench_dir = Path(bench_dir)
    if bench["options"]["task"] == "overlap":   # v1.5: pairs of playbacks (benchmarks/fdb/score_v15.py)
        from duplexeval.benchmarks.fdb.score_v15 import score_v15_dir

        return score_v15_dir(bench_dir, bench, cache_mode, progress=progress)
    info = {s["id"]: s for s in json.loads((bench_dir / SAMPLES_FILE).read_text("utf-8"))["samples"]}
    judges = judges_for(bench, cache_mode)
    calls: Counter = Counter()
    return score_bench_folder(
        bench_dir, item_statuses(bench_dir, info, unplanned_folders=False),
        score_ok=lambda d: [score_sample(d.name, info[d.name], d / "recording.wav", bench, judges, calls)],
        score_not_ok=lambda d, status: [{"item": d.name, "outcome": "error", "status": status,
                                         "reason": not_ok_reason(d, status)}],
        aggregate=lambda records, counts: aggregate(records, bench, counts, calls),
        progress=progress)
