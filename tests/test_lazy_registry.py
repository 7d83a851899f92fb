"""The `module:Class` registries of ASR, TTS and judge backends (duplexeval.lazy): listing them
imports nothing, choosing one imports its module, an unknown name lists the choices."""

from __future__ import annotations

import subprocess
import sys

import pytest

from duplexeval.lazy import BackendLoadError, LazyRegistry


def test_a_name_is_imported_only_when_chosen():
    code = ("import sys\n"
            "from duplexeval.judges.asr_backends import BACKENDS\n"
            "from duplexeval.tts_backends import BACKENDS as TTS\n"
            "from duplexeval.judges.providers import JUDGE_BACKENDS\n"
            "names = sorted(BACKENDS) + sorted(TTS) + sorted(JUDGE_BACKENDS)\n"
            "mods = [m for m in sys.modules if m.endswith(('_backend', 'qwen3_tts', 'judges.offline'))]\n"
            "assert mods == [], mods\n"
            "BACKENDS['pocketsphinx']\n"
            "assert 'duplexeval.judges.asr_backends.pocketsphinx_backend' in sys.modules\n"
            "print(' '.join(names))\n")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["faster-whisper", "parakeet-tdt", "pocketsphinx", "qwen3-asr", "stable-ts",
                                  "whisper-timestamped", "qwen3-tts", "anthropic", "offline", "openai",
                                  "openai-compatible"]


def test_every_registered_target_loads():
    from duplexeval.judges.asr_backends import BACKENDS, Backend
    from duplexeval.judges.providers import JUDGE_BACKENDS
    from duplexeval.tts_backends import BACKENDS as TTS

    for name in BACKENDS:
        assert issubclass(BACKENDS[name], Backend) and BACKENDS[name]().name == name
    for name in TTS:
        assert all(callable(getattr(TTS[name], f)) for f in ("settings", "voice_for", "cache_components",
                                                             "synthesize_native"))
    assert all(callable(JUDGE_BACKENDS[name]) for name in JUDGE_BACKENDS)


def test_an_unknown_name_lists_the_choices_and_the_nearest():
    reg: LazyRegistry = LazyRegistry("ASR backend", {"faster-whisper": "collections:OrderedDict"})
    with pytest.raises(ValueError, match=r"unknown ASR backend 'faster-whispr'; choose one of faster-whisper "
                                         r"\(did you mean 'faster-whisper'\?\)"):
        reg.create("faster-whispr")
    assert reg.create("faster-whisper") == {}


def test_a_broken_target_is_named():
    with pytest.raises(ValueError, match="is not 'module:Class'"):
        LazyRegistry("TTS backend", {"x": "collections.OrderedDict"})
    reg: LazyRegistry = LazyRegistry("TTS backend", {"x": "collections:NoSuchThing"})
    with pytest.raises(BackendLoadError, match="TTS backend 'x': collections:NoSuchThing has no 'NoSuchThing'"):
        reg["x"]
