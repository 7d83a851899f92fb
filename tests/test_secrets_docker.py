"""The planted-key scan on the docker path: a key in the harness's shell never reaches a
container's environment, an image's layers or config, or an error reason built from a
container's logs.

The first tests need no engine (run_kwargs is pure; diagnostics is checked on a stand-in
container object); the rest are marked `docker` and use the real engine and image.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from runner_helpers import faulty_spec, tone

from duplexeval.runner import FileStimulus, load_model_spec, run_items
from duplexeval.runner.backends.docker import DockerBackend, run_kwargs
from duplexeval.secrets import SECRET_ENV_VARS

KEYS = {
    "OPENAI_API_KEY": "sk-test-PLANTED-docker-openai-0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-test-PLANTED-docker-anthropic-0123456789",
    "HF_TOKEN": "hf_test_PLANTED_docker_0123456789abcdef",
}
ALLOWED_ENV = {"DUPLEXEVAL_SOCKET", "DUPLEXEVAL_WEIGHTS"}


@pytest.fixture
def planted(monkeypatch):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    return KEYS


def _clean(text: str) -> bool:
    return "PLANTED" not in text and not any(v in text for v in KEYS.values())


# ---- no engine needed ----------------------------------------------------------------

@pytest.mark.parametrize("model", ["silent", "oracle", "moshi"])
def test_run_kwargs_pass_only_the_specs_env_and_duplexeval_variables(planted, model):
    spec = load_model_spec(model)
    spec = spec if spec.backend == "docker" else spec.with_backend("docker")
    kw = run_kwargs(spec, "/tmp/dxe-secrets", "s1", weights_dir="/data/weights", run_id="r1")
    env = kw["environment"]
    assert set(env) == set(spec.env) | ALLOWED_ENV, sorted(env)
    assert not set(env) & set(SECRET_ENV_VARS)
    assert _clean(repr(kw))  # not in the command, labels, volumes or anywhere else


class _StandInContainer:
    """What diagnostics reads of a container (name, State, logs), with a model that printed a key."""

    name = "duplexeval-faulty-x"
    attrs = {"State": {"Status": "exited", "ExitCode": 3, "OOMKilled": False}}

    def reload(self) -> None:
        pass

    def logs(self, tail: int) -> bytes:
        return ("loading\nauth with " + KEYS["OPENAI_API_KEY"] + "\ncrash\n").encode()


def test_diagnostics_redact_a_key_the_container_printed(planted):
    backend = DockerBackend(load_model_spec("silent").with_backend("docker"), client=object())
    backend.container = _StandInContainer()
    text = backend.diagnostics()
    assert "exit code 3" in text and "<OPENAI_API_KEY>" in text and _clean(text), text


# ---- a real engine -------------------------------------------------------------------

def _docker_spec(command: list[str], mode: str = "crash") -> dict:
    spec = faulty_spec(mode)
    spec["launch"].update(backend="docker", image="duplexeval/agents:0.1", build="images/agents", gpus=0,
                          command=command)
    return spec


@pytest.mark.docker
def test_a_real_containers_environment_holds_no_key_of_the_harness(agents_image, planted):
    backend = DockerBackend(load_model_spec("silent").with_backend("docker"))
    try:
        backend.start()
        backend.container.reload()
        env = backend.container.attrs["Config"]["Env"]
        names = {e.split("=", 1)[0] for e in env}
        assert not names & set(SECRET_ENV_VARS), env
        assert _clean(json.dumps(backend.container.attrs)), "a planted key is in the container's config"
    finally:
        backend.stop(grace_s=0)


@pytest.mark.docker
def test_the_agents_image_layers_and_config_hold_no_key(agents_image, docker_engine, planted):
    from duplexeval.containers.build import context_sha256, stage_build_context

    image = docker_engine.images.get(agents_image)
    history = docker_engine.api.history(agents_image)
    text = json.dumps(history) + json.dumps(image.attrs)
    assert _clean(text)
    env_names = {e.split("=", 1)[0] for e in image.attrs["Config"].get("Env") or []}
    assert not env_names & set(SECRET_ENV_VARS), env_names
    # The build context never includes the environment: staged with the keys set, it has
    # the same identity as one staged without them, and no staged file holds a key.
    spec = load_model_spec("silent")
    base = docker_engine.images.get(spec.base_image)
    with tempfile.TemporaryDirectory(prefix="dxe-secrets-") as tmp:
        ctx = Path(tmp)
        wheels = stage_build_context(spec, ctx, progress=lambda _: None)
        with_keys = context_sha256(ctx, wheels, base.id)
        with pytest.MonkeyPatch.context() as mp:
            for name in KEYS:
                mp.delenv(name)
            with tempfile.TemporaryDirectory(prefix="dxe-secrets-") as tmp2:
                clean = Path(tmp2)
                assert context_sha256(clean, stage_build_context(spec, clean, progress=lambda _: None), base.id) == with_keys
        for p in ctx.rglob("*"):
            if p.is_file() and p.parent != ctx / "wheels":
                data = p.read_bytes()
                assert not any(v.encode() in data for v in KEYS.values()), p


@pytest.mark.docker
def test_an_error_reason_from_the_logs_of_a_container_that_prints_a_key_is_redacted(agents_image, planted, tmp_path):
    key = KEYS["OPENAI_API_KEY"]
    # The key can only get in through the spec (here its command); the container prints
    # it, then crashes at frame 3 as the faulty agent does.
    leak = (f"import sys, runpy; print('token {key}', file=sys.stderr, flush=True); "
            "sys.argv = ['faulty', '--socket', '/run/duplexeval/model.sock', '--mode', 'crash', '--at-frame', '3']; "
            "runpy.run_module('duplexeval.agents.faulty', run_name='__main__')")
    results = run_items(_docker_spec(["python", "-c", leak]), [("a", lambda: FileStimulus(tone(1.0), 16000))],
                        tmp_path)
    assert results[0].status == "error"
    status = json.loads((tmp_path / "items" / "a" / "status.json").read_text())
    assert "exit code 3" in status["reason"] and "<OPENAI_API_KEY>" in status["reason"], status["reason"]
    for p in tmp_path.rglob("*"):
        if p.is_file():
            assert _clean(p.read_text("utf-8", "replace")), p


@pytest.mark.docker
def test_a_container_that_prints_a_key_and_never_listens_gives_a_redacted_startup_reason(agents_image, planted,
                                                                                          tmp_path):
    key = KEYS["HF_TOKEN"]
    run_items(_docker_spec(["python", "-c", f"import sys; print('hf {key}', file=sys.stderr); sys.exit(4)"]),
              [("a", lambda: FileStimulus(tone(0.3), 16000))], tmp_path)
    status = json.loads((tmp_path / "items" / "a" / "status.json").read_text())
    assert status["error_code"] == "STARTUP" and "<HF_TOKEN>" in status["reason"], status["reason"]
    assert _clean(status["reason"]) and _clean((tmp_path / "items" / "a" / "events.jsonl").read_text())
