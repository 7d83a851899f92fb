"""Judge prompt templates: Jinja files rendered strictly into chat messages.

A template is plain text with role markers on their own lines (`[system]`, `[user]`,
`[assistant]`) and a version comment on its first line:
    {# duplexeval-template version: 1 #}
The version must match the spec's `template.version`, so a prompt edit without a version
bump is caught; the file's sha256 (part of the cache key) catches it either way.
StrictUndefined: a missing input is an error, never an empty string in a prompt.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2

from duplexeval.io import sha256_file

_VERSION = re.compile(r"^\{#\s*duplexeval-template version:\s*(\d+)\s*#\}")
_ROLE = re.compile(r"^\[(system|user|assistant)\]\s*$")


class TemplateError(ValueError):
    pass


def template_version(path: Path) -> int:
    first = path.read_text(encoding="utf-8").splitlines()[0] if path.stat().st_size else ""
    match = _VERSION.match(first)
    if not match:
        raise TemplateError(f"{path}: first line must be '{{# duplexeval-template version: N #}}'")
    return int(match.group(1))


def _environment(folder: Path) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), undefined=jinja2.StrictUndefined,
                             autoescape=False, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = _tojson
    return env


def _tojson(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class PromptTemplate:
    """One template file, checked against the spec's version on load."""

    def __init__(self, path: Path, expected_version: int) -> None:
        self.path = path
        if not path.exists():
            raise TemplateError(f"judge template {path} does not exist")
        found = template_version(path)
        if found != expected_version:
            raise TemplateError(f"{path}: template says version {found}, spec says {expected_version}")
        self.version = found
        self.sha256 = sha256_file(path)
        self._template = _environment(path.parent).get_template(path.name)

    def render(self, inputs: dict[str, Any]) -> list[dict[str, str]]:
        try:
            text = self._template.render(**inputs)
        except jinja2.UndefinedError as exc:
            raise TemplateError(f"{self.path}: {exc.message} (inputs given: {sorted(inputs)})") from None
        return split_messages(text, self.path)


def split_messages(text: str, origin: Path | str = "<template>") -> list[dict[str, str]]:
    messages: list[dict[str, str]] = []
    for line in text.splitlines():
        match = _ROLE.match(line)
        if match:
            messages.append({"role": match.group(1), "content": ""})
        elif messages:
            messages[-1]["content"] += line + "\n"
        elif line.strip():
            raise TemplateError(f"{origin}: text before the first [system]/[user] marker: {line[:60]!r}")
    for m in messages:
        m["content"] = m["content"].strip()
    if not any(m["role"] == "user" for m in messages):
        raise TemplateError(f"{origin}: renders no [user] message")
    return messages
