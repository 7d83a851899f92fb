"""The Full-Duplex-Bench authors' own model outputs (`import-recordings ... --layout fdb-authors`) and the
readings their backchannel scorer implies (issue 35): `vad_rate` (assume-16k: Silero takes a 24 or 48 kHz
file's samples as 16 kHz), `output_length` (as recorded vs cut to the input) and `vad_end_clamp`.

The outputs are laid by hand as their inference scripts leave them: `<ID>/output.wav`, mono, at 24 kHz
(Moshi, Freeze-Omni, Gemini) and 48 kHz (GPT-Realtime), running 1 s past the input, holding three short
backchannels (flite) 3 s apart; the last, "I see", is 0.7 s of speech, read as 1.07 s when a 24 kHz file
is taken for 16 kHz, which crosses the authors' 1 s rule. Real Silero, faster-whisper tiny.en, the
embedded suite's backchannel samples. `bench/fdb_differential.py rates` runs their eval_backchannel.py on
the same outputs (docs/fdb.md, "Differential").
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from duplexeval.cli import cli

RATE = 16000
CLIPS = ("yeah", "uh huh", "I see")
AUTHORS = {"options.backchannel.vad_rate": "assume-16k", "options.backchannel.vad_end_clamp": "clamp-to-end",
           "options.output_length": "as-recorded"}


def _bench(readings: dict[str, str]) -> tuple[dict, str]:
    from duplexeval.runfolder.plan import apply_overrides
    from duplexeval.specs import Registry

    registry = Registry.load()
    overrides = dict(registry.get("suite", "embedded").data.get("overrides", {}))
    spec = registry.get("benchmark", "fdb-backchannel")
    return apply_overrides(spec.data, {**overrides, "readings": {**overrides.get("readings", {}), **readings}}), \
        spec.sha256


@pytest.fixture(scope="module")
def samples() -> list:
    from duplexeval.benchmarks.fdb.samples import data_root, list_samples

    bench, _ = _bench({})
    return list_samples(bench, data_root(bench))


def outputs(folder: Path, rate: int, samples: list) -> Path:
    from duplexeval.audio import resample
    from duplexeval.tts import synthesize

    for s in samples:
        n = int((sf.info(str(s.folder / "input.wav")).duration + 1.0) * RATE)
        said = np.zeros(n, dtype=np.float32)
        for k, word in enumerate(CLIPS):
            clip = synthesize(word, "rms", RATE)
            at = int((1.0 + 3.0 * k) * RATE)
            said[at:at + len(clip)] = clip[: max(0, n - at)]
        (folder / s.id).mkdir(parents=True)
        sf.write(folder / s.id / "output.wav", resample(said, RATE, rate), rate, subtype="PCM_16")
    return folder


def imported(tmp: Path, rate: int, samples: list, readings: dict[str, str], run_id: str):
    from duplexeval.benchmarks import ImportRequest
    from duplexeval.benchmarks.fdb.authors_import import import_authors_outputs

    bench, sha = _bench(readings)
    src = tmp / f"out-{rate}"
    if not src.exists():
        outputs(src, rate, samples)
    return import_authors_outputs(bench, src, ImportRequest(layout="fdb-authors", model="authors", runs_dir=tmp / "runs",
                                                            run_id=run_id, suite="embedded", bench_sha256=sha,
                                                            cache_mode="readwrite", log=lambda s: None))


def metric(done, name: str) -> float:
    return done.results["metrics"][name]["value"]


@pytest.mark.parametrize("rate", [24000, 48000])
def test_an_output_at_24_or_48_khz_imports_scores_and_verifies(tmp_path, samples, rate):
    src = outputs(tmp_path / "src", rate, samples)
    args = ["import-recordings", "fdb-backchannel", str(src), "--model", "authors", "--layout", "fdb-authors",
            "--suite", "embedded", "--runs-dir", str(tmp_path / "runs"), "--run-id", "r"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    bench_dir = tmp_path / "runs" / "r" / "authors" / "fdb-backchannel"
    for s in samples:
        info = sf.info(str(bench_dir / "items" / s.id / "recording.wav"))
        assert (info.samplerate, info.channels) == (rate, 2)   # kept at the output's rate: the readings need it
    results = json.loads((bench_dir / "results.json").read_text())
    assert results["metrics"]["tor"]["denominator"] == len(samples)
    assert results["metrics"]["frequency"]["value"] > 0      # the true-rate reading hears the backchannels
    verified = CliRunner().invoke(cli, ["verify", str(tmp_path / "runs" / "r")])
    assert verified.exit_code == 0 and "intact" in verified.output, verified.output


def test_their_vad_rate_stretches_24_khz_and_hears_nothing_at_48(tmp_path, samples):
    ours24 = imported(tmp_path, 24000, samples, {}, "ours24")
    ours48 = imported(tmp_path, 48000, samples, {}, "ours48")
    theirs24 = imported(tmp_path, 24000, samples, AUTHORS, "theirs24")
    theirs48 = imported(tmp_path, 48000, samples, AUTHORS, "theirs48")
    # the true rate: the same answers at either rate read the same (0.7 s "I see" is a backchannel)
    assert metric(ours24, "tor") == metric(ours48, "tor") == 0.0
    assert metric(ours24, "frequency") == pytest.approx(metric(ours48, "frequency"), abs=1e-3)
    assert metric(ours24, "frequency") > 0
    # assume-16k at 24 kHz: "I see" reads 1.5x as long, past 1 s: the last segment takes the turn
    assert metric(theirs24, "tor") == 1.0
    recs = [json.loads(line) for line in (theirs24.bench_dir / "records.jsonl").read_text().splitlines()]
    ends = [d for r in recs for d in r["segments"]]
    assert any(d["takes_turn"] for d in ends)
    assert all(d["segment"][1] - d["segment"][0] >= 1.0 for d in ends if d["takes_turn"])
    # assume-16k at 48 kHz: Silero given speech at a third of its pitch hears nothing
    assert metric(theirs48, "frequency") == 0.0 and metric(theirs48, "jsd") == 1.0


def test_a_nan_output_an_unknown_folder_and_a_missing_output_are_skipped_and_the_import_is_partial(tmp_path, samples):
    src = outputs(tmp_path / "src", 24000, samples)
    first, second = samples[0].id, samples[1].id
    sf.write(src / first / "output.wav", np.full(24000, np.nan, dtype=np.float32), 24000, subtype="FLOAT")
    (src / "999").mkdir()
    (src / "999" / "output.wav").write_bytes((src / second / "output.wav").read_bytes())
    result = CliRunner().invoke(cli, ["import-recordings", "fdb-backchannel", str(src), "--model", "authors",
                                      "--layout", "fdb-authors", "--suite", "embedded", "--runs-dir",
                                      str(tmp_path / "runs"), "--run-id", "r"])
    assert result.exit_code == 4, result.output
    assert f"skipped {first}/output.wav: non-finite samples (NaN or inf): channel 0: 24000 of 24000" in result.output
    assert "skipped 999: names no sample of icc_backchannel" in result.output
    assert "partial import: 2 file(s) refused" in result.output
    results = json.loads((tmp_path / "runs" / "r" / "authors" / "fdb-backchannel" / "results.json").read_text())
    assert results["metrics"]["tor"]["denominator"] == 1      # the NaN output is not scored as a silent model
    # every output refused: nothing is imported, exit 2
    sf.write(src / second / "output.wav", np.stack([np.zeros(100)] * 2, axis=1), 24000)
    result = CliRunner().invoke(cli, ["import-recordings", "fdb-backchannel", str(src), "--model", "authors",
                                      "--layout", "fdb-authors", "--suite", "embedded", "--runs-dir",
                                      str(tmp_path / "runs"), "--run-id", "r2"])
    assert result.exit_code == 2 and "2 channels" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "runs" / "r2").exists()


def test_a_layout_the_family_does_not_import_is_refused_naming_its_layouts(tmp_path):
    result = CliRunner().invoke(cli, ["import-recordings", "fdb-backchannel", str(tmp_path), "--model", "x",
                                      "--layout", "mtr-authors"])
    assert result.exit_code == 2 and "it imports fdb-authors" in result.output


def test_output_length_as_recorded_keeps_a_reply_that_runs_past_the_input(tmp_path, samples):
    from duplexeval.benchmarks.fdb.score import output_channel

    bench, _ = _bench({})
    model = np.ones(3 * RATE, dtype=np.float32)
    assert len(output_channel(model, RATE, 2.0, bench)) == 2 * RATE                # cut-to-input (ours)
    bench["options"]["output_length"] = "as-recorded"
    assert len(output_channel(model, RATE, 2.0, bench)) == 3 * RATE


def test_a_segment_running_to_the_end_is_clamped_to_the_audio_under_the_end_clamp(tmp_path):
    from duplexeval.benchmarks.fdb.score import _segments
    from duplexeval.tts import synthesize

    # speech to the very end of a 1.96 s file: the end rounds to 2.0 s, 0.04 s past the audio
    clip = synthesize("I see what you mean", "rms", RATE)
    clip = clip[: int(0.5 * RATE) + np.flatnonzero(np.abs(clip) > 0.05)[-1]]   # cut inside the speech
    audio = np.concatenate([np.zeros(int(1.96 * RATE) - len(clip), dtype=np.float32), clip])
    assert len(audio) == int(1.96 * RATE)
    bench, _ = _bench({})
    unclamped = _segments(audio, RATE, bench)
    assert unclamped[-1][1] == 2.0
    bench["options"]["backchannel"]["vad_end_clamp"] = "clamp-to-end"
    assert _segments(audio, RATE, bench)[-1][1] == pytest.approx(1.96)


def test_a_v15_output_pair_imports_as_the_sample_and_its_clean_run(tmp_path):
    """v1.5: their inference leaves output.wav (with the overlap) and clean_output.wav (without) per sample."""
    from duplexeval.audio import resample
    from duplexeval.benchmarks.fdb.samples import data_root, list_samples
    from duplexeval.runfolder.plan import apply_overrides
    from duplexeval.specs import Registry
    from duplexeval.tts import synthesize

    registry = Registry.load()
    bench = apply_overrides(registry.get("benchmark", "fdb-v15-user-backchannel").data,
                            dict(registry.get("suite", "embedded").data.get("overrides", {})))
    reply = synthesize("A rainbow forms when sunlight bends through raindrops.", "rms", RATE)
    ids = []
    for s in list_samples(bench, data_root(bench)):
        ids.append(s.id)
        (tmp_path / "src" / s.id).mkdir(parents=True)
        for name, heard in (("output.wav", "input.wav"), ("clean_output.wav", "clean_input.wav")):
            said = np.zeros(int(sf.info(str(s.folder / heard)).duration * RATE), dtype=np.float32)
            said[RATE:RATE + len(reply)] = reply[: len(said) - RATE]
            sf.write(tmp_path / "src" / s.id / name, resample(said, RATE, 24000), 24000, subtype="PCM_16")
    (tmp_path / "src" / ids[0] / "clean_output.wav").unlink()      # half a pair: the sample is skipped
    result = CliRunner().invoke(cli, ["import-recordings", "fdb-v15-user-backchannel", str(tmp_path / "src"),
                                      "--model", "m", "--layout", "fdb-authors", "--suite", "embedded",
                                      "--runs-dir", str(tmp_path / "runs"), "--run-id", "r"])
    assert result.exit_code == 4 and f"skipped {ids[0]}/clean_output.wav: missing" in result.output, result.output
    items = tmp_path / "runs" / "r" / "m" / "fdb-v15-user-backchannel" / "items"
    assert sorted(p.name for p in items.iterdir()) == sorted([i + bench["options"]["v15"]["clean_suffix"]
                                                              for i in ids[1:]] + ids[1:])


@pytest.mark.parametrize("run_id", ["../../evil", "a/b", ".."])
def test_a_run_id_that_is_no_name_is_refused_before_anything_is_written(tmp_path, run_id):
    """Issue 39: `import-recordings --run-id ../../evil` wrote outside --runs-dir."""
    (tmp_path / "src").mkdir()
    result = CliRunner().invoke(cli, ["import-recordings", "fdb-backchannel", str(tmp_path / "src"), "--model", "m",
                                      "--layout", "fdb-authors", "--runs-dir", str(tmp_path / "runs"),
                                      "--run-id", run_id])
    assert result.exit_code == 2 and "--run-id" in result.output, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
