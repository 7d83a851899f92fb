"""Judge specs for tests: the repository's real paper specs, pointed at the local server."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
SPECS = REPO / "specs" / "judges"

FAST_TRANSPORT = {"timeout_s": 0.5, "max_retries": 3, "backoff_base_s": 0.01, "backoff_max_s": 0.05,
                  "concurrency": 2}


def load_spec(judge_id: str) -> tuple[dict[str, Any], Path]:
    path = SPECS / f"{judge_id}.yaml"
    return yaml.safe_load(path.read_text()), path


def local_spec(judge_id: str, server_url: str, **overrides: Any) -> tuple[dict[str, Any], Path]:
    """A paper judge spec redirected to the test server (anthropic: /v1/messages; others: /v1)."""
    data, path = load_spec(judge_id)
    data = copy.deepcopy(data)
    if data["provider"] == "anthropic":
        data["base_url"] = server_url
    else:
        data["provider"] = "openai-compatible"
        data["base_url"] = server_url + "/v1"
    data["transport"] = dict(FAST_TRANSPORT)
    data.update(overrides)
    return data, path
