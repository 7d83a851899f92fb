"""The Full-Duplex-Bench authors' relevance prompt, read at run time from their repository.

Why at run time: the authors' judge (their `eval_user_interruption.py`) is a reading of
this project (docs/fdb.md, "The relevance judge"), and its prompt is their text, which
this repository does not copy. The judge spec pins where it lives (`upstream_prompt`:
repository, 40-hex commit, file path, the file's sha256); the file is fetched like data:

- it is kept at `$DUPLEXEVAL_CACHE/upstream/<owner>+<name>/<commit>/<path>` and its
  sha256 is checked on every read, so an edited or truncated copy is refused by name;
- a missing file is downloaded from `<base_url>/<owner>/<name>/<commit>/<path>` (GitHub's
  raw file host unless the spec says otherwise; a test points it at 127.0.0.1), checked,
  then written atomically; without a network it is an error saying where to put it by
  hand. In replay mode (`duplexeval sensitivity`, `--cache-mode replay`) nothing is ever
  downloaded: a missing file is a `CacheMiss`, like a verdict nobody has paid for.

The prompt is then read from the file's syntax tree, not executed: inside the named
function, the string assigned to `system` (theirs: `system_msg`) and the f-string
assigned to `user` (theirs: `user_msg`), whose placeholders name their variables, mapped
to our inputs by `fields` (e.g. `in_interrupt_text: user_turn`), and the regular
expression their `parser` function compiles, whose `rating_group` is the rating (the
last match in the answer wins, as in their loop). A file whose function or
assignments are not found, or whose f-string uses a name `fields` does not map, is an
error naming the file and the name.
"""

from __future__ import annotations

import ast
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.io import atomic_write_bytes, sha256_bytes
from duplexeval.judges.cache import CacheMiss
from duplexeval.resources import cache_root

RAW_BASE = "https://raw.githubusercontent.com"
FETCH_TIMEOUT_S = 30.0
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class UpstreamPromptError(ValueError):
    """The authors' file cannot be had or read; the message names the file and what to do."""


class UpstreamPromptMissing(CacheMiss):
    """Replay mode and the file is not on disk: nothing is downloaded (like a judge-cache miss)."""


@dataclass(frozen=True)
class UpstreamPrompt:
    """The judge spec's `upstream_prompt` block."""

    repo: str
    commit: str
    path: str
    sha256: str
    function: str
    system: str
    user: str
    fields: dict[str, str]
    parser: str
    rating_group: int
    base_url: str = RAW_BASE

    @staticmethod
    def from_spec(block: Any, where: str) -> "UpstreamPrompt":
        if not isinstance(block, dict):
            raise UpstreamPromptError(f"{where}: upstream_prompt must be a mapping")
        need = ("repo", "commit", "path", "sha256", "function", "system", "user", "fields", "parser", "rating_group")
        missing = [k for k in need if k not in block]
        if missing:
            raise UpstreamPromptError(f"{where}: upstream_prompt.{missing[0]} is missing")
        if not _COMMIT.match(str(block["commit"])):
            raise UpstreamPromptError(f"{where}: upstream_prompt.commit must be a 40-hex commit")
        if not _SHA256.match(str(block["sha256"])):
            raise UpstreamPromptError(f"{where}: upstream_prompt.sha256 must be 64 hex digits")
        if str(block["repo"]).count("/") != 1:
            raise UpstreamPromptError(f"{where}: upstream_prompt.repo must be owner/name")
        return UpstreamPrompt(str(block["repo"]), str(block["commit"]), str(block["path"]).lstrip("/"),
                              str(block["sha256"]), str(block["function"]), str(block["system"]),
                              str(block["user"]), {str(k): str(v) for k, v in dict(block["fields"]).items()},
                              str(block["parser"]), int(block["rating_group"]),
                              str(block.get("base_url", RAW_BASE)).rstrip("/"))

    def local_path(self) -> Path:
        return cache_root() / "upstream" / self.repo.replace("/", "+") / self.commit / self.path

    def url(self) -> str:
        return f"{self.base_url}/{self.repo}/{self.commit}/{self.path}"

    def describe(self) -> str:
        return f"{self.repo}@{self.commit[:12]}:{self.path}"


def fetch(pin: UpstreamPrompt, *, replay: bool = False) -> bytes:
    """The pinned file's bytes, verified; downloaded (then kept) when missing and not `replay`."""
    path = pin.local_path()
    if path.is_file():
        data = path.read_bytes()
        got = sha256_bytes(data)
        if got != pin.sha256:
            raise UpstreamPromptError(f"{path}: sha256 {got} is not the pinned {pin.sha256} ({pin.describe()}); "
                                      "delete the file to fetch it again")
        return data
    if replay:
        raise UpstreamPromptMissing(f"the authors' prompt file {pin.describe()} is not at {path}, and replay "
                                    "mode downloads nothing (run once with network, or place it there by hand)")
    try:
        with urllib.request.urlopen(pin.url(), timeout=FETCH_TIMEOUT_S) as response:  # noqa: S310 (pinned URL)
            data = response.read()
    except (urllib.error.URLError, OSError) as exc:
        raise UpstreamPromptError(f"cannot download {pin.url()} ({exc}); place the file of {pin.describe()} "
                                  f"at {path} by hand (its sha256 must be {pin.sha256})") from None
    got = sha256_bytes(data)
    if got != pin.sha256:
        raise UpstreamPromptError(f"{pin.url()}: sha256 {got} is not the pinned {pin.sha256}; nothing was kept")
    atomic_write_bytes(path, data)
    return data


@dataclass(frozen=True)
class AuthorsPrompt:
    """The system message, the user message as literal parts and input names, and the
    pattern their parser finds the rating with (compiled with their flags)."""

    system: str
    user_parts: tuple[tuple[str, str], ...]   # ("text", literal) or ("input", our input name)
    source_sha256: str
    pattern: re.Pattern[str]

    def messages(self, inputs: dict[str, Any]) -> list[dict[str, str]]:
        """The two chat messages exactly as the authors' code builds them (nothing stripped)."""
        user = "".join(v if kind == "text" else str(inputs[v]) for kind, v in self.user_parts)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


def read_prompt(pin: UpstreamPrompt, *, replay: bool = False) -> AuthorsPrompt:
    """The authors' prompt from the pinned file (module docstring)."""
    data = fetch(pin, replay=replay)
    where = f"{pin.local_path()} ({pin.describe()})"
    try:
        tree = ast.parse(data.decode("utf-8"))
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise UpstreamPromptError(f"{where}: not readable Python ({exc})") from None
    func = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == pin.function), None)
    if func is None:
        raise UpstreamPromptError(f"{where}: no function {pin.function!r}")
    values = {t.id: n.value for n in ast.walk(func) if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Name)}
    system = values.get(pin.system)
    if not (isinstance(system, ast.Constant) and isinstance(system.value, str)):
        raise UpstreamPromptError(f"{where}: {pin.function}() assigns no string to {pin.system!r}")
    user = values.get(pin.user)
    if not isinstance(user, ast.JoinedStr):
        raise UpstreamPromptError(f"{where}: {pin.function}() assigns no f-string to {pin.user!r}")
    parts: list[tuple[str, str]] = []
    for part in user.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            parts.append(("text", part.value))
        elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) and part.format_spec is None \
                and part.conversion == -1:
            name = part.value.id
            if name not in pin.fields:
                raise UpstreamPromptError(f"{where}: {pin.user!r} uses {name!r}, which upstream_prompt.fields "
                                          f"does not map (maps {', '.join(sorted(pin.fields))})")
            parts.append(("input", pin.fields[name]))
        else:
            raise UpstreamPromptError(f"{where}: {pin.user!r} has a placeholder that is not a plain name")
    return AuthorsPrompt(system.value, tuple(parts), pin.sha256, _parser_pattern(tree, pin, where))


_FLAGS = {"DOTALL": re.DOTALL, "S": re.DOTALL, "IGNORECASE": re.IGNORECASE, "I": re.IGNORECASE,
          "MULTILINE": re.MULTILINE, "M": re.MULTILINE}


def _flag_value(node: ast.expr, where: str) -> int:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _flag_value(node.left, where) | _flag_value(node.right, where)
    if isinstance(node, ast.Attribute) and node.attr in _FLAGS:
        return _FLAGS[node.attr]
    raise UpstreamPromptError(f"{where}: the parser's regular expression has flags this reader does not know")


def _parser_pattern(tree: ast.Module, pin: UpstreamPrompt, where: str) -> re.Pattern[str]:
    """The pattern the authors' `parser` function compiles (`re.compile(PATTERN, FLAGS)`)."""
    func = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == pin.parser), None)
    if func is None:
        raise UpstreamPromptError(f"{where}: no parser function {pin.parser!r}")
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "compile" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            flags = _flag_value(node.args[1], where) if len(node.args) > 1 else 0
            pattern = re.compile(node.args[0].value, flags)
            if pattern.groups < pin.rating_group:
                raise UpstreamPromptError(f"{where}: the parser's pattern has {pattern.groups} groups, "
                                          f"upstream_prompt.rating_group is {pin.rating_group}")
            return pattern
    raise UpstreamPromptError(f"{where}: {pin.parser}() compiles no regular expression")
