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


SUITE = """kind: suite
id: {id}
description: a suite of the sweep
runs:
  - models: [silent]
    benchmarks: [mpe-explicit]
clock: lockstep
cache_mode: readwrite
"""
# Issue 39, case 4: suite overrides go through the benchmark schema (bounds, unknown keys), at their line.
SUITE_OVERRIDES = {
    "negwait": "overrides:\n  scheduler:\n    max_wait_s: -5\n",
    "typowait": "overrides:\n  scheduler:\n    max_wiat_s: 60\n",
    "nanwait": "overrides:\n  scheduler:\n    max_wait_s: .nan\n",
    "infgap": "overrides:\n  scheduler:\n    turn_gap_s: .inf\n",
    "typerole": "overrides:\n  judges:\n    answr: mpe-answer-offline\n",
    "typodata": "overrides:\n  data:\n    mpe:\n      source: embedded\n      pth: data/embedded/mpe/scenes\n",
    "badasr": "overrides:\n  asr:\n    backend: faster-whisper\n    modle: tiny.en\n",
    "badreading": "overrides:\n  scheduler:\n    after_t: whenever\n",
    "nodata": "overrides:\n  data:\n    mpe:\n      source: embedded\n      path: data/embedded/mpe/nosuch\n",
}


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
    (tmp_path / "full").mkdir()  # a folder of the user's that a mistyped OUT must not cost them
    (tmp_path / "full" / "thesis.txt").write_text("years of work\n")
    (tmp_path / "lookalike" / "icc_backchannel" / "1").mkdir(parents=True)  # a render's shape, plus a user file
    (tmp_path / "lookalike" / "icc_backchannel" / "notes.txt").write_text("mine\n")
    (tmp_path / "lookalike" / "icc_backchannel" / "1" / "input.wav").write_bytes(b"RIFF")
    suites = tmp_path / "suites"
    suites.mkdir()
    for name, overrides in SUITE_OVERRIDES.items():
        (suites / f"{name}.yaml").write_text(SUITE.format(id=name) + overrides)
    (tmp_path / "recordings").mkdir()
    sf.write(tmp_path / "recordings" / "x.wav", np.zeros((1600, 2), dtype=np.float32), 16000)
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
    # issue 39 (1): no command deletes a non-empty folder it did not write without --force
    ("fdb render-embedded {t}/full", 2, ["full", "thesis.txt", "--force"], {}),
    ("fdb render-embedded {t}/lookalike", 2, ["lookalike", "--force"], {}),
    ("fdb render-embedded {t}/afile", 2, ["afile"], {}),
    ("fdb render-embedded {t}/full --source {t}/ok.wav", 2, ["ok.wav"], {}),
    # (2) a golden cell the run lacks is a failure, counted in the summary line
    ("compare {t}/run --golden " + str(golden_dir() / "embedded.yaml"), 1, ["120 missing", "-> FAIL"], {}),
    ("compare {t}/run --golden " + str(golden_dir() / "duplex-mpe.yaml"), 1, [" missing", "-> FAIL"], {}),
    ("compare {t}/run --strict --allow-missing --golden " + str(golden_dir() / "embedded.yaml"), 2,
     ["--allow-missing"], {}),
    # (4) suite overrides: schema bounds, unknown keys with did-you-mean, at the suite's line
    ("validate {t}/suites/negwait.yaml", 1, ["negwait.yaml:11", "overrides.scheduler.max_wait_s", "minimum"], {}),
    ("validate {t}/suites/typowait.yaml", 1, ["typowait.yaml:11", "max_wiat_s", "did you mean 'max_wait_s'"], {}),
    ("validate {t}/suites/nanwait.yaml", 1, ["nanwait.yaml:11", "max_wait_s", "not a finite number"], {}),
    ("validate {t}/suites/infgap.yaml", 1, ["infgap.yaml:11", "turn_gap_s", "not a finite number"], {}),
    ("validate {t}/suites/typerole.yaml", 1, ["typerole.yaml:11", "answr", "did you mean 'answer'"], {}),
    ("validate {t}/suites/typodata.yaml", 1, ["typodata.yaml:13", "overrides.data.mpe.pth", "did you mean 'path'"], {}),
    ("validate {t}/suites/badasr.yaml", 1, ["badasr.yaml:12", "overrides.asr.modle", "did you mean 'model'"], {}),
    ("validate {t}/suites/nodata.yaml", 1, ["nodata.yaml:13", "overrides.data.mpe.path", "does not exist"], {}),
    ("validate {t}/suites/badreading.yaml", 1, ["badreading.yaml:11", "overrides.scheduler.after_t", "whenever"], {}),
    # (5) every reader of a run verifies it first
    ("export {t}/damaged", 2, ["damaged", "results.json"], {}),
    ("export {t}/unsealed --format json --out -", 2, ["damaged", "manifest.json"], {}),
    ("export {t}/damaged --format markdown --out {t}/out.md", 2, ["damaged", "results.json"], {}),
    ("sensitivity {t}/damaged", 2, ["damaged", "results.json"], {}),
    # (7) NaN and infinities are refused by every numeric option
    ("compare {t}/run --golden " + str(golden_dir() / "embedded.yaml") + " --tolerance inf", 2, ["--tolerance"], {}),
    ("compare {t}/run --golden " + str(golden_dir() / "embedded.yaml") + " --tolerance -inf", 2, ["--tolerance"], {}),
    ("conformance silent --long-s -inf", 2, ["--long-s"], {}),
    ("conformance silent --realtime-s 1e400", 2, ["--realtime-s"], {}),
    ("session silent {t}/ok.wav --out {t}/out --tail-s NaN", 2, ["--tail-s"], {}),
    ("session silent {t}/ok.wav --out {t}/out --seed -1", 2, ["--seed"], {}),
    ("cache prune --older-than-days -inf --yes", 2, ["--older-than-days"], {}),
    # (8) every path-like id is a name, never a path
    ("import-recordings mtr-safety {t}/recordings --model m --run-id ../../evil --runs-dir {t}/runs", 2,
     ["--run-id", "../../evil"], {}),
    ("import-recordings mtr-safety {t}/recordings --model m --run-id a/b --runs-dir {t}/runs", 2, ["--run-id"], {}),
    ("import-recordings mtr-safety {t}/recordings --model ../../m --runs-dir {t}/runs", 2, ["--model"], {}),
    ("import-recordings mtr-safety {t}/recordings --model .. --runs-dir {t}/runs", 2, ["--model"], {}),
    ("run --run-id .. --runs-dir {t}/runs", 2, ["--run-id"], {}),
    ("reproduce --run-id /etc --runs-dir {t}/runs", 2, ["--run-id"], {}),
    ("new-model ../escape --dir {t}/out", 2, ["../escape", "lower-case letters"], {}),  # scaffold's stricter rule
    ("cleanup --run-id ../x", 2, ["--run-id"], {}),
    ("report {t}/run --item ../../../etc", 2, ["--item"], {}),
    # (9) preflight: a missing API key is one line naming it, before anything is written
    ("run --suite paper-fdb --models gpt-realtime --runs-dir {t}/runs", 2,
     ["OPENAI_API_KEY is not set", "model gpt-realtime", "--no-preflight"], {"OPENAI_API_KEY": ""}),
    ("run --suite embedded --models gpt-realtime --benchmarks mpe-explicit --clock realtime --runs-dir {t}/runs", 2,
     ["OPENAI_API_KEY is not set"], {"OPENAI_API_KEY": ""}),
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
                    "compare", "verify", "report", "validate", "paper-check", "segment", "mtr render",
                    "fdb render-embedded", "export", "sensitivity", "import-recordings", "new-model", "cleanup"):
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


def _commands(group=None, prefix: str = ""):
    """(name, command) of every command of the CLI tree, families' included."""
    import click

    group = group or cli
    for name, command in sorted(group.commands.items()):
        full = f"{prefix}{name}"
        if isinstance(command, click.Group):
            yield from _commands(command, full + " ")
        else:
            yield full, command


def test_every_float_option_of_every_command_refuses_nan_and_infinities():
    """Issue 39: one parameter type (duplexeval.cli_params.Finite) for every number, so no option is missed."""
    import click

    from duplexeval.cli_params import Finite

    floats = []
    for name, command in _commands():
        for param in command.params:
            if isinstance(param.type, click.types.FloatParamType):
                floats.append(f"{name} {param.opts[0]}")
            if isinstance(param.type, Finite):
                for text in ("nan", "inf", "-inf", "1e400"):
                    with pytest.raises(click.BadParameter):
                        param.type.convert(text, param, None)
    assert floats == [], "float options without Finite: " + ", ".join(floats)


# Commands that take a run folder but need not refuse a damaged one: `verify` is the check itself;
# `score` rebuilds results.json from the items and names every damaged item (exit 4);
# `export-recordings` skips unfinished or damaged items by name.
READS_RUN_UNGATED = {"verify", "score", "export-recordings"}


def test_every_command_that_reads_a_run_verifies_it_first():
    readers = [name for name, command in _commands() if any(p.name == "run_dir" for p in command.params)]
    assert {"report", "compare", "export", "sensitivity"} <= set(readers)
    ungated = [name for name in readers if name not in READS_RUN_UNGATED
               and not any(p.name == "allow_damaged" for p in next(c for n, c in _commands() if n == name).params)]
    assert ungated == [], f"read a run without the integrity gate: {ungated}"


def test_every_path_like_id_option_goes_through_the_name_sanitizer():
    """--run-id of every command, import-recordings' --model, report's --item: names, never paths (new-model's NAME has
    scaffold()'s stricter rule, swept above)."""
    checked = {(name, p.opts[0]) for name, command in _commands() for p in command.params
               if p.name in ("run_id",) or (name, p.name) in {("import-recordings", "model"), ("report", "item")}}
    assert len(checked) >= 5, checked
    for name, opt in sorted(checked):
        command = next(c for n, c in _commands() if n == name)
        param = next(p for p in command.params if p.opts[0] == opt)
        assert param.callback is not None, f"{name} {opt} has no sanitizer"
        result = CliRunner().invoke(cli, [*name.split(), *([opt, "../x"] if opt.startswith("-") else ["../x"])])
        assert result.exit_code == 2 and "not a name" in result.output, (name, opt, result.output)
