"""Hashes of the files a verdict depends on: part of every judge's cache key.

Its own module so that `duplexeval.judges.llm` and `duplexeval.judges.offline` both use
it without importing each other (issue 13, item 15).
"""

from __future__ import annotations

from pathlib import Path

from duplexeval.io import sha256_file


def artifact_hashes(artifacts: dict[str, str] | None) -> dict[str, str]:
    """name -> sha256 of the files a verdict depends on (e.g. the recording it was heard from).

    A value may be a path, or an already computed hash written as 'sha256:<hex>'.
    """
    out: dict[str, str] = {}
    for name, value in sorted((artifacts or {}).items()):
        if value.startswith("sha256:"):
            out[name] = value[len("sha256:"):]
        else:
            path = Path(value)
            if not path.is_file():
                raise FileNotFoundError(f"judge artifact {name!r}: {path} is not a file")
            out[name] = sha256_file(path)
    return out
