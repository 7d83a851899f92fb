"""The API keys this bundle knows of, and the one way their values are kept out of text.

Keys come from the environment only (judges, the cascaded baseline, the hub). Anything
that turns outside text into a message — the CLI's errors, a model's stderr or container
log tail in an item's error reason — passes it through `redact`, and `duplexeval verify`
scans a run for the same values.
"""

from __future__ import annotations

import os

SECRET_ENV_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "GEMINI_API_KEY")
MIN_SECRET_LEN = 8  # shorter values are not keys, and replacing them would mangle ordinary text


# A realtime-api model spec names its own key variable (launch.realtime.api_key_env), which
# the schema requires to end so: every such variable is a key, whichever spec names it.
SECRET_ENV_SUFFIXES = ("_API_KEY", "_TOKEN")


def secret_values() -> dict[str, str]:
    """Name -> value of every known key set in this environment."""
    names = list(SECRET_ENV_VARS) + sorted(n for n in os.environ if n.endswith(SECRET_ENV_SUFFIXES) and n not in SECRET_ENV_VARS)
    return {n: v for n in names if len(v := os.environ.get(n, "")) >= MIN_SECRET_LEN}


def redact(text: str) -> str:
    """`text` with every known key's value replaced by <NAME>."""
    for name, value in secret_values().items():
        text = text.replace(value, f"<{name}>")
    return text
