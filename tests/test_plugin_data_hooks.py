"""A family reaches `duplexeval data import NAME PATH`, `data fetch NAME` and
`export-recordings --layout NAME` through its plug-in's hooks (`data_importers()`,
`recording_exporters()`), without the commands naming it: shown with the toy family of
tests/plugin_fixtures, found through its entry point like any installed plug-in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import soundfile as sf
from test_benchmark_plugins import FIXTURES, REPO, installed_toybench


def duplexeval(args: list[str], site: Path, data_cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DUPLEXEVAL_SPECS": str(FIXTURES / "specs"), "DUPLEXEVAL_DATA_CACHE": str(data_cache),
           "PYTHONPATH": os.pathsep.join([str(site), str(FIXTURES), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "duplexeval", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_data_import_and_fetch_reach_the_family_importer(tmp_path):
    site = installed_toybench(tmp_path / "site")
    cache = tmp_path / "cache"
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "tones.json").write_text(json.dumps([{"hz": 220, "seconds": 0.4}, {"hz": "x", "seconds": 1}]))

    bad = duplexeval(["data", "import", "toy-tones", str(copy)], site, cache)
    assert bad.returncode == 2 and "tones.json: [1].hz is not a number" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr
    assert not (cache / "toy-tones" / "imported").exists()          # nothing half-written

    (copy / "tones.json").write_text(json.dumps([{"hz": 220, "seconds": 0.4}]))
    good = duplexeval(["data", "import", "toy-tones", str(copy)], site, cache)
    assert good.returncode == 0, good.stderr
    assert "imported toy-tones: 1 files" in good.stdout and "  tones: 1" in good.stdout
    imported = cache / "toy-tones" / "imported"
    assert json.loads((imported / "tones.json").read_text()) == [{"hz": 220, "seconds": 0.4}]
    manifest = json.loads((imported / "duplexeval-import.json").read_text())
    assert manifest["data_set"] == "toy-tones" and manifest["source"]["verified"] is False

    fetched = duplexeval(["data", "fetch", "toy-tones"], site, cache)
    assert fetched.returncode == 2
    assert "toy-tones cannot be fetched by duplexeval: place tones.json in a folder of your own" in fetched.stderr
    assert "duplexeval data import toy-tones PATH" in fetched.stderr

    unknown = duplexeval(["data", "import", "toy-tonez", str(copy)], site, cache)
    assert unknown.returncode == 2 and "did you mean 'toy-tones'?" in unknown.stderr, unknown.stderr


def _item(folder: Path, item: str, status: str) -> None:
    d = folder / "items" / item
    d.mkdir(parents=True)
    (d / "status.json").write_text(json.dumps({"status": status}))
    t = np.arange(1600) / 16000
    sf.write(d / "recording.wav", np.stack([0 * t, 0.3 * np.sin(2 * np.pi * 440 * t)], axis=1), 16000)


def test_export_recordings_reaches_the_family_exporter_and_skips_other_families(tmp_path):
    site = installed_toybench(tmp_path / "site")
    run = tmp_path / "run"
    toy = run / "babbler" / "toy-tones"
    _item(toy, "tone-220", "ok")
    _item(toy, "tone-440", "error")
    (toy / "benchmark.json").write_text(json.dumps({"id": "toy-tones", "benchmark": "toybench"}))
    other = run / "babbler" / "mtr-smooth-turn-taking"
    _item(other, "d1-r1", "ok")
    (other / "benchmark.json").write_text(json.dumps({"id": "mtr-smooth-turn-taking", "benchmark": "mtr-duplexbench"}))

    out = tmp_path / "out"
    done = duplexeval(["export-recordings", str(run), "--layout", "toy-layout", str(out)], site, tmp_path / "c")
    assert done.returncode == 0, done.stderr
    assert "babbler/mtr-smooth-turn-taking: skipped (the toy-layout layout is toybench's)" in done.stderr
    assert "babbler/toy-tones: 1 recordings, 1 not exported" in done.stdout
    written = sorted(p.name for p in (out / "babbler" / "toy-tones").iterdir())
    assert written == ["tone-220.wav"]
    assert sf.info(out / "babbler" / "toy-tones" / "tone-220.wav").channels == 1

    unknown = duplexeval(["export-recordings", str(run), "--layout", "nosuch", str(tmp_path / "o2")], site,
                         tmp_path / "c")
    assert unknown.returncode == 2 and "'nosuch' is not one of" in unknown.stderr and "toy-layout" in unknown.stderr
