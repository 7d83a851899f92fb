"""Backend `realtime-api`: a model served by a realtime API, reached through the bridge process.

The bridge (duplexeval/realtime/bridge.py) is a local subprocess speaking protocol v1 on
a Unix socket, so everything the runner does to a local model (health check, stderr
tail in error reasons, redaction, kill on fault, PR_SET_PDEATHSIG) applies unchanged.
Its configuration travels as JSON in its environment; the API key is never part of it:
the bridge reads the variable the spec names (`launch.realtime.api_key_env`), which it
inherits like any local model's environment.
"""

from __future__ import annotations

from dataclasses import replace

from duplexeval.runner.backends.local import LocalBackend
from duplexeval.specs.modelspec import ModelSpec
from duplexeval.specs.realtime_config import CONFIG_ENV, config_from_spec

BRIDGE_COMMAND = ("{python}", "-m", "duplexeval.realtime.bridge", "--socket", "{socket}")


class RealtimeApiBackend(LocalBackend):
    def __init__(self, spec: ModelSpec):
        self.config = config_from_spec(spec.id, spec.data, spec.realtime_url)
        super().__init__(replace(spec, command=BRIDGE_COMMAND, env={**spec.env, CONFIG_ENV: self.config.to_env()}))


__all__ = ["BRIDGE_COMMAND", "RealtimeApiBackend"]
