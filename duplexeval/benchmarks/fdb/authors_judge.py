"""The Full-Duplex-Bench authors' relevance judge: their prompt, their parse, re-asked.

Their `eval_user_interruption.py` asks gpt-4-turbo (seed 0, the API's default
temperature) with their system and user messages, finds the rating with their regular
expression in the answer, and asks again, with no bound, until one parses. This judge
does the same with a bound (`reask.max_asks`, ours: their loop never ends on a model that
never writes the tag): ask k is the judge cache's sample k, so each re-ask is its own
cached answer and a replay re-reads exactly the asks that were made. The prompt and the
pattern are read at run time from their repository at the spec's pinned commit
(duplexeval.benchmarks.fdb.upstream_prompt); they are part of every cache key (the
messages themselves, and the file's sha256 as the template hash).

A verdict is the integer rating of the last match (their loop keeps the last), with
`asks` (how many asks it took) in its data; none in `max_asks` asks is unparseable.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from duplexeval.benchmarks.fdb.upstream_prompt import AuthorsPrompt, UpstreamPrompt, read_prompt
from duplexeval.judges.artifacts import artifact_hashes
from duplexeval.judges.cache import JudgeCache, cache_key, key_components
from duplexeval.judges.llm import Judge
from duplexeval.judges.verdict import Verdict


class AuthorsRelevanceJudge(Judge):
    """A judge spec with an `upstream_prompt` block (specs/judges/fdb-interruption-relevance-authors.yaml)."""

    def __init__(self, data: dict[str, Any], spec_path: Path, cache: JudgeCache | None = None, **kwargs: Any) -> None:
        super().__init__(data, spec_path, cache, **kwargs)
        self.pin = UpstreamPrompt.from_spec(data.get("upstream_prompt"), f"judge {self.id} ({spec_path})")
        reask = data.get("reask") or {}
        self.max_asks = int(reask.get("max_asks", 1))
        if self.max_asks < 1:
            raise ValueError(f"judge {self.id}: reask.max_asks must be at least 1")
        self._prompt: AuthorsPrompt | None = None

    def prompt(self) -> AuthorsPrompt:
        """Read once per judge, on first use (replay mode never downloads it)."""
        if self._prompt is None:
            self._prompt = read_prompt(self.pin, replay=self.cache.replay)
        return self._prompt

    def key_for(self, inputs: dict[str, Any], artifacts: dict[str, str] | None = None,
                sample: int = 0) -> tuple[str, dict[str, Any]]:
        prompt = self.prompt()
        components = key_components(provider=self.provider_name, model=self.model, snapshot=self.snapshot,
                                    base_url=self.base_url, template_sha256=prompt.source_sha256,
                                    messages=prompt.messages(inputs), decoding=self.decoding,
                                    artifacts=artifact_hashes(artifacts), sample=sample)
        return cache_key(components), components

    def _verdict(self, raw: str, key: str, *, from_cache: bool) -> Verdict:
        matches = list(self.prompt().pattern.finditer(raw + "\n"))
        if not matches:
            return Verdict(value=self.unparseable_counts_as, parsed_ok=False, raw=raw,
                           reason="unparseable: the authors' pattern finds no rating", cache_key=key,
                           judge_id=self.id, label=self.label, from_cache=from_cache)
        match = matches[-1]
        rating = int(match.group(self.pin.rating_group))
        analysis = match.group(1).strip() if self.pin.rating_group != 1 else ""
        return Verdict(value=rating, parsed_ok=True, raw=raw, reason=analysis, cache_key=key, judge_id=self.id,
                       label=self.label, from_cache=from_cache, data={"verdict": rating, "reason": analysis})

    def decide(self, inputs: dict[str, Any], artifacts: dict[str, str] | None = None, *, sample: int = 0) -> Verdict:
        """Ask, and ask again while the rating does not parse, at most `max_asks` times."""
        verdict = None
        for ask in range(self.max_asks):
            verdict = super().decide(inputs, artifacts, sample=ask)
            if verdict.parsed_ok:
                return dataclasses.replace(verdict, data={**(verdict.data or {}), "asks": ask + 1})
        assert verdict is not None
        return dataclasses.replace(verdict, reason=f"{verdict.reason} (in all {self.max_asks} asks)",
                                   data={"asks": self.max_asks})


def judge_from_spec(data: dict[str, Any], spec_path: Path | str, cache: JudgeCache | None = None, **kwargs: Any) -> Any:
    """The relevance judge a spec describes: the authors' when it pins their prompt, else the usual."""
    if data.get("upstream_prompt") is not None:
        return AuthorsRelevanceJudge(data, Path(spec_path), cache, **kwargs)
    return Judge.from_spec(data, spec_path, cache, **kwargs)
