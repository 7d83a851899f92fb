"""Every command, driven with the bad inputs of issue 25, fails the same way (docs/reliability.md).

Each case asserts: the documented exit code (2 for bad input; 1 where a command's contract
says so, e.g. `validate` on a bad spec), the offending file, field or option named in the
message, no traceback and no "internal error", nothing written anywhere (no run folder,
cache entry or traceback file appears), and nothing deleted or changed (a sealed run and a
judge cache with entries sit beside every case and are hashed before and after).

A new bad input joins the sweep as one line of CASES.
"""

from __future__ import annotations

import hashlib
import os
import struct
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner
from report_fixture import make_run

from duplexeval.cli import cli
from duplexeval.judges.cache import JudgeCache, cache_key, key_components
from duplexeval.reports.golden import golden_dir

BILLION_LAUGHS = "kind: model\nid: lol\n" + "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10))


def _wav_with_rate(path: Path, rate: int) -> None:
    """A PCM WAV whose header claims `rate` (a forged or damaged header; soundfile refuses to write one)."""
    data = np.zeros(16000, dtype=np.int16).tobytes()
    fmt = struct.pack("<IHHIIHH", 16, 1, 1, rate, (rate * 2) & 0xFFFFFFFF, 2, 16)
    path.write_bytes(b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + fmt + b"data"
                     + struct.pack("<I", len(data)) + data)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """The bad inputs, sealed runs and a filled judge cache, made once: every case checks that it
    changed nothing, so the next case finds them as they were."""
    tmp_path = tmp_path_factory.mktemp("sweep")
    sf.write(tmp_path / "ok.wav", np.zeros(16000, dtype=np.float32), 16000)
    _wav_with_rate(tmp_path / "hugerate.wav", 2**31 - 1)
    (tmp_path / "laughs.yaml").write_text(BILLION_LAUGHS)
    (tmp_path / "selfref.yaml").write_text("kind: model\nid: selfref\nnotes: &a [*a]\n")
    (tmp_path / "control.yaml").write_text("kind: model\nid: x\x07\n")
    (tmp_path / "dupkey.yaml").write_text("kind: model\nid: a\nid: b\n")
    (tmp_path / "afile").write_text("not a folder\n")
    make_run(tmp_path, "run")
    damaged = make_run(tmp_path, "damaged")
    results = damaged / "silent" / "mpe-explicit" / "results.json"
    results.write_text(results.read_text().replace('"ok": 24', '"ok": 25'))  # an edit after sealing
    unsealed = make_run(tmp_path, "unsealed")
    (unsealed / "manifest.json").unlink()
    cache = JudgeCache(tmp_path / "cache" / "judges", "readwrite")
    for n in range(3):
        parts = key_components(provider="openai", model="m", snapshot=None, base_url=None, template_sha256="t" * 64,
                               messages=[{"role": "user", "content": f"q{n}"}], decoding={}, artifacts={})
        cache.put(cache_key(parts), parts, {"text": f"a{n}"}, {"judge_id": "j"})
    return tmp_path


@pytest.fixture
def t(inputs, monkeypatch) -> Path:
    """The inputs' folder as the working folder, with its own cache and traceback folders."""
    monkeypatch.chdir(inputs)
    monkeypatch.setenv("DUPLEXEVAL_TRACEBACK_DIR", str(inputs / "tracebacks"))
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(inputs / "cache"))
    return inputs


# (command line with {t} for the fixture folder, exit code, texts the message must name, extra environment)
CASES = [
    # nothing irrecoverable without a bounded, confirmed request
    ("cache prune --older-than-days -5 --yes", 2, ["--older-than-days"], {}),
    ("cache prune --older-than-days 0 --yes", 2, ["--older-than-days"], {}),
    ("cache prune --older-than-days nan --yes", 2, ["--older-than-days"], {}),
    ("cache prune --older-than-days inf --yes", 2, ["--older-than-days"], {}),
    ("cache explain UNKNOWN", 2, ["KEY"], {}),
    ("cache explain " + "f" * 64, 1, ["not in the cache"], {}),
    # run ids are names, job counts and options are bounded and consistent
    ("run --run-id ../escape --runs-dir {t}/runs", 2, ["--run-id"], {}),
    ("run --run-id a/b --runs-dir {t}/runs", 2, ["--run-id"], {}),
    ("reproduce --run-id ../escape --runs-dir {t}/runs", 2, ["--run-id"], {}),
    ("run --executor local --jobs 1000 --runs-dir {t}/runs", 2, ["--jobs"], {}),
    ("run --executor ray --jobs 5000 --runs-dir {t}/runs", 2, ["--jobs"], {}),
    ("run --jobs 4 --runs-dir {t}/runs", 2, ["--jobs", "--executor"], {}),
    ("run --ray-address 127.0.0.1:1 --runs-dir {t}/runs", 2, ["--ray-address", "--executor"], {}),
    ("reproduce --ray-address 127.0.0.1:1 --runs-dir {t}/runs", 2, ["--ray-address", "--executor"], {}),
    ("run --endpoint unix:{t}/x.sock --backend docker --runs-dir {t}/runs", 2, ["--endpoint", "--backend"], {}),
    ("run --models moshi --runs-dir {t}/runs", 2, ["moshi", "--benchmarks"], {}),
    ("run --limit 0 --runs-dir {t}/runs", 2, ["--limit"], {}),
    # numbers finite and in range, files named
    ("session silent {t}/ok.wav --out {t}/out --rate 1000000000", 2, ["--rate"], {}),
    ("session silent {t}/ok.wav --out {t}/out --tail-s inf", 2, ["--tail-s"], {}),
    ("session silent {t}/ok.wav --out {t}/out --tail-s nan", 2, ["--tail-s"], {}),
    ("session silent {t}/ok.wav --out {t}/out --tail-s -1", 2, ["--tail-s"], {}),
    ("session silent {t}/hugerate.wav --out {t}/out", 2, ["hugerate.wav", "2147483647 Hz"], {}),
    ("session silent {t}/ok.wav --out {t}/out --endpoint unix:{t}/x.sock --backend local", 2,
     ["--endpoint", "--backend"], {}),
    ("conformance silent --endpoint unix:{t}/x.sock --backend docker", 2, ["--endpoint", "--backend"], {}),
    ("conformance silent --long-s inf", 2, ["--long-s"], {}),
    ("conformance silent --long-s nan", 2, ["--long-s"], {}),
    ("conformance silent --realtime-s nan", 2, ["--realtime-s"], {}),
    ("compare {t}/run --golden " + str(golden_dir() / "embedded.yaml") + " --tolerance -1", 2, ["--tolerance"], {}),
    ("compare {t}/run --golden " + str(golden_dir() / "embedded.yaml") + " --tolerance nan", 2, ["--tolerance"], {}),
    ("verify {t}/run --cache {t}/nonexistent", 2, ["--cache"], {}),
    ("ls models", 2, ["DUPLEXEVAL_CACHE"], {"DUPLEXEVAL_CACHE": "{t}/afile"}),
    ("ls models", 2, ["DUPLEXEVAL_CACHE"], {"DUPLEXEVAL_CACHE": ""}),
    # YAML: alias bombs, recursion, the parser fuzz's findings (validate exits 1 on a bad spec)
    ("validate {t}/laughs.yaml", 1, ["laughs.yaml", "aliases are expanded"], {}),
    ("validate {t}/selfref.yaml", 1, ["selfref.yaml:3", "recursive anchor"], {}),
    ("validate {t}/control.yaml", 1, ["control.yaml:2", "not allowed"], {}),
    ("validate {t}/dupkey.yaml", 1, ["dupkey.yaml:3", "duplicate key"], {}),
    # unclear or wrong errors
    ("paper-check --golden " + str(golden_dir() / "full-duplex-bench.yaml"), 2, ["--golden", "full-duplex-bench"], {}),
    ("paper-check --golden {t}/ok.wav", 2, ["ok.wav"], {}),
    ("segment {t}/ok.wav", 2, ["ok.wav", "UTF-8"], {}),
    ("mtr render {t}/ok.wav {t}/out", 2, ["ok.wav", "UTF-8"], {}),
    # integrity: a damaged run is refused by every reader
    ("verify {t}/unsealed", 1, ["manifest.json", "DAMAGED"], {}),
    ("verify {t}/damaged", 1, ["results.json", "DAMAGED"], {}),
    ("report {t}/damaged --no-paper-arithmetic", 2, ["damaged", "results.json"], {}),
    ("report {t}/unsealed --no-paper-arithmetic", 2, ["damaged", "manifest.json"], {}),
    ("compare {t}/damaged --golden " + str(golden_dir() / "embedded.yaml"), 2, ["damaged", "results.json"], {}),
]


def _tree(root: Path) -> dict[str, str]:
    """Every file under root with its sha256 (symlinks and folders aside)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.mark.parametrize("line,code,names,env", CASES, ids=[c[0][:60] for c in CASES])
def test_bad_input_is_refused_naming_it_and_touches_nothing(t, line, code, names, env):
    before = _tree(t)
    argv = [a.format(t=t) for a in line.split()]
    result = CliRunner().invoke(cli, argv, env={k: v.format(t=t) for k, v in env.items()})
    out = result.output
    assert result.exit_code == code, out
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in out and "internal error" not in out, out
    for name in names:
        assert name.format(t=t) in out, (name, out)
    after = _tree(t)
    assert {k: v for k, v in before.items() if after.get(k) != v} == {}, "changed or deleted"
    assert sorted(set(after) - set(before)) == [], "written"


def test_every_command_has_a_bounded_input_case():
    """The sweep covers run, reproduce, session, conformance, cache, compare, verify, report, validate."""
    covered = {" ".join(w for w in c[0].split()[:2] if not w.startswith(("-", "{"))) for c in CASES}
    for command in ("run", "reproduce", "session silent", "conformance silent", "cache prune", "cache explain",
                    "compare", "verify", "report", "validate", "paper-check", "segment", "mtr render"):
        assert any(c == command or c.startswith(command) for c in covered), command


def test_a_billion_laughs_yaml_is_refused_within_a_second(tmp_path):
    from duplexeval.specs.errors import SpecError
    from duplexeval.specs.yaml_source import load_yaml

    path = tmp_path / "laughs.yaml"
    path.write_text(BILLION_LAUGHS)
    start = time.monotonic()
    with pytest.raises(SpecError, match="aliases are expanded"):
        load_yaml(path)
    assert time.monotonic() - start < 1.0


def test_the_run_folder_of_a_good_run_id_stays_inside_runs_dir(t):
    """A run id that passes is a plain name: its folder is a child of --runs-dir."""
    from duplexeval.commands.bounds import RUN_ID

    for good in ("embedded", "embedded-20261202-052258", "a.b_c-1"):
        assert RUN_ID.fullmatch(good) and (t / "runs" / good).resolve().parent == (t / "runs").resolve()
    assert not os.path.exists(t / "runs")


def test_a_corrupt_manifest_or_session_config_is_named(tmp_path):
    """`score` re-seals the manifest and a resume reads session_config.json: both name the file."""
    from duplexeval.runfolder.verify import seal_manifest
    from duplexeval.runner.items import _check_config

    (tmp_path / "manifest.json").write_text("{corrupt")
    with pytest.raises(ValueError, match=r"manifest\.json: unreadable"):
        seal_manifest(tmp_path)
    (tmp_path / "session_config.json").write_text("")
    with pytest.raises(ValueError, match=r"session_config\.json: unreadable"):
        _check_config(tmp_path, {"clock": "lockstep"})


def test_more_local_jobs_than_cores_is_warned_and_far_more_refused(capsys):
    import click

    from duplexeval.commands.bounds import LOCAL_JOBS_PER_CORE, check_executor, cores

    check_executor("local", cores(), None)
    assert capsys.readouterr().err == ""
    check_executor("local", cores() + 1, None)
    assert "more than this machine's" in capsys.readouterr().err
    with pytest.raises(click.BadParameter, match="would only thrash"):
        check_executor("local", LOCAL_JOBS_PER_CORE * cores() + 1, None)
    check_executor("ray", LOCAL_JOBS_PER_CORE * cores() + 1, None)  # a cluster may hold more than this machine
