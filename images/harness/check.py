"""Check the harness image (or any environment): the papers' ASR/TTS backends load and run.

    python images/harness/check.py [--json OUT.json] [--device cuda|cpu]

Two levels, each reported per backend as ok / skipped (why) / FAILED (error):

1. RANDOM TINY WEIGHTS (no weights needed; real code paths, meaningless output): a tiny
   Whisper through whisper-timestamped and stable-ts, a tiny Qwen3-ASR with a tiny
   Qwen3-ForcedAligner through qwen-asr (duplexeval.judges.tiny_models), checking the
   adapters' contract (ordered words inside the clip). qwen-tts: import and torchaudio
   (its 25 Hz tokenizer's import) load.
2. PAPER WEIGHTS, where the weights cache ($DUPLEXEVAL_WEIGHTS_CACHE, /weights in the
   image) holds them verified: Qwen3-TTS speaks a sentence in each of paper-mpe's pinned
   voices, and Qwen3-ASR (+ aligner), whisper-timestamped medium.en (MTR settings) and
   stable-ts medium.en transcribe it; the report prints what each heard and the share of
   the sentence's words found - the round trip a reader can judge by eye.

Exit status 1 when anything FAILED; skipped checks (missing weights; with --strict only
those) do not fail.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

SENTENCE = "The taco place is nine dollars a head, and it takes cards."
RATE = 16000


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def _contract(result, seconds: float) -> None:
    starts = [w.start for w in result.words]
    assert starts == sorted(starts), "words out of order"
    assert all(0.0 <= w.start <= w.end <= seconds + 1e-6 for w in result.words), "word times outside the clip"


def _tone(seconds: float):
    import numpy as np

    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * (200 + 100 * t) * t)).astype(np.float32)


def run(device: str, strict: bool = False) -> list[dict]:
    from duplexeval.judges import asr
    from duplexeval.judges.local_models import MissingExtraError, MissingWeightsError
    from duplexeval.judges.tiny_models import write_tiny_qwen3_asr, write_tiny_whisper

    report: list[dict] = []

    def check(name: str, fn) -> object:
        t0 = time.time()
        try:
            out = fn()
            report.append({"check": name, "status": "ok", "s": round(time.time() - t0, 2), "detail": out})
            return out
        except MissingWeightsError as exc:
            report.append({"check": name, "status": "skipped", "detail": str(exc).splitlines()[0]})
        except (MissingExtraError, ImportError, OSError) as exc:  # not installed here (OSError: torchaudio)
            status = "FAILED" if strict else "skipped"
            report.append({"check": name, "status": status, "detail": f"not installed: {str(exc).splitlines()[0]}"})
        except Exception as exc:  # noqa: BLE001 - a check script reports every failure
            report.append({"check": name, "status": "FAILED", "detail": f"{type(exc).__name__}: {exc}",
                           "traceback": traceback.format_exc()[-2000:]})
        return None

    def versions():
        import torch

        out = {"torch": torch.__version__, "cuda": torch.cuda.is_available()}
        for mod in ("torchaudio", "transformers", "qwen_asr", "qwen_tts", "whisper_timestamped", "stable_whisper"):
            try:
                m = __import__(mod)
                out[mod] = getattr(m, "__version__", "imported")
            except Exception as exc:  # noqa: BLE001
                out[mod] = f"{type(exc).__name__}: {exc}"[:200]
        return out

    check("versions", versions)
    tmp = Path(tempfile.mkdtemp(prefix="dxe-harness-check-"))
    clip = _tone(2.0)
    opts = {"device": device}

    # 1. random tiny weights
    def tiny_whisper(backend: str):
        path = write_tiny_whisper(tmp / "tiny-random.pt")
        result = asr.transcribe(clip, RATE, {"backend": backend, "model": str(path), "language": "en",
                                             "options": {**opts, "sample_len": 12}}, cache=False)
        _contract(result, 2.0)
        return f"{len(result.words)} words (random tiny weights)"

    check("whisper-timestamped, random tiny Whisper", lambda: tiny_whisper("whisper-timestamped"))
    check("stable-ts, random tiny Whisper", lambda: tiny_whisper("stable-ts"))

    def tiny_qwen3():
        model = write_tiny_qwen3_asr(tmp / "qwen3-asr")
        aligner = write_tiny_qwen3_asr(tmp / "qwen3-aligner", aligner=True, seed=1)
        result = asr.transcribe(clip, RATE, {"backend": "qwen3-asr", "model": str(model), "language": "en",
                                             "options": {**opts, "forced_aligner": str(aligner), "max_new_tokens": 12}},
                                cache=False)
        _contract(result, 2.0)
        return f"{len(result.words)} words (random tiny weights)"

    check("qwen3-asr + forced aligner, random tiny models", tiny_qwen3)

    def qwen_tts_imports():
        from duplexeval.tts_backends import qwen3_tts

        qwen3_tts._import()
        import torchaudio.compliance.kaldi  # noqa: F401 - what qwen-tts's import needs

        return "qwen_tts and torchaudio load"

    check("qwen3-tts imports", qwen_tts_imports)

    # 2. paper weights: TTS -> ASR round trip
    from duplexeval.specs import Registry
    from duplexeval.tts import synthesize

    registry = Registry.load()
    suite_tts = dict(registry.get("suite", "paper-mpe").data["tts"])
    suite_tts["options"] = {**suite_tts.get("options", {}), **opts}
    spoken = {}

    def speak(speaker: str):
        audio = synthesize(SENTENCE, "slt", RATE, cache_dir=tmp / "tts", tts=suite_tts, speaker=speaker)
        assert len(audio) > RATE // 2, f"only {len(audio)} samples"
        spoken[speaker] = audio
        return f"{len(audio) / RATE:.2f} s in voice {suite_tts['voices'][speaker]}"

    for speaker in sorted(suite_tts["voices"]):
        check(f"qwen3-tts paper weights, speaker {speaker}", lambda s=speaker: speak(s))
    if not spoken:
        from duplexeval.tts import FLITE_VOICES, flite_binary

        try:
            flite_binary()
            spoken["flite"] = synthesize(SENTENCE, FLITE_VOICES[0], RATE, cache_dir=tmp / "tts")
        except RuntimeError:
            pass

    mpe = registry.get("benchmark", "mpe-explicit").data["asr"]
    mtr = registry.get("benchmark", "mtr-quality").data["asr"]
    stable = {**mtr, "backend": "stable-ts",
              "options": {k: v for k, v in mtr["options"].items() if k not in ("detect_disfluencies",
                                                                             "include_punctuation_in_confidence", "seed")}}
    for name, spec in (("qwen3-asr paper weights", mpe), ("whisper-timestamped medium.en paper weights", mtr),
                       ("stable-ts medium.en paper weights", stable)):
        for who, audio in spoken.items():
            def hear(spec=spec, audio=audio):
                result = asr.transcribe(audio, RATE, {**spec, "options": {**spec.get("options", {}), **opts}}, cache=False)
                _contract(result, len(audio) / RATE)
                said, heard = _words(SENTENCE), set(_words(result.text))
                return {"heard": result.text, "words_found": round(sum(w in heard for w in said) / len(said), 3),
                        "n_words": len(result.words), "asr_id": asr.asr_id({**spec, "options": {**spec.get("options", {}), **opts}})}

            check(f"{name}, hears {who}", hear)
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--strict", action="store_true", help="a backend that does not import is a failure (the image's CMD)")
    args = ap.parse_args()
    from duplexeval.judges.asr_backends import torch_device

    report = run(torch_device(args.device), strict=args.strict)
    for row in report:
        detail = row.get("detail")
        print(f"{row['status']:<8} {row['check']}: {json.dumps(detail) if isinstance(detail, dict) else detail}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    failed = [r for r in report if r["status"] == "FAILED"]
    for row in failed:
        print(f"\n--- {row['check']}\n{row.get('traceback', '')}", file=sys.stderr)
    print(f"{sum(r['status'] == 'ok' for r in report)} ok, {len(failed)} failed, "
          f"{sum(r['status'] == 'skipped' for r in report)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
