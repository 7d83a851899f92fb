"""LLM judges built from judge specs: render, look up the cache, ask (bounded), parse strictly.

One `Judge` is one judged decision (a spec in `specs/judges/`). `decide()` renders the
spec's Jinja template with the inputs, builds the cache key from everything that can
change the answer (see `duplexeval.judges.cache`), and only on a miss asks the provider
through the real SDK, with bounded, logged retries and a per-provider concurrency cap.
The provider's raw answer is what is cached; the verdict is parsed from it on every
read, so a replay parses exactly what the model said.

`Judge.from_spec` returns an `OfflineJudge` for `provider: offline` specs, so callers
have one entry point and one `decide()` interface for both.
"""

from __future__ import annotations

import logging
import random
import time
from pathlib import Path
from typing import Any, Callable

from duplexeval.judges.artifacts import artifact_hashes  # noqa: F401  (re-exported: older imports)
from duplexeval.judges.cache import JudgeCache, cache_key, key_components
from duplexeval.judges.providers import (
    DEFAULT_BASE_URLS,
    DEFAULT_CONCURRENCY,
    JUDGE_BACKENDS,
    Provider,
    check_decoding,
    provider_semaphore,
)
from duplexeval.judges.retry import RetryPolicy, call_with_retries
from duplexeval.judges.templates import PromptTemplate
from duplexeval.judges.verdict import Verdict, parse_verdict

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 60.0


class Judge:
    """An LLM judge (provider openai, anthropic or openai-compatible)."""

    def __init__(self, data: dict[str, Any], spec_path: Path, cache: JudgeCache | None = None, *,
                 sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None) -> None:
        if data.get("provider") == "offline":
            raise ValueError(f"judge {data.get('id')}: offline specs are built with Judge.from_spec")
        self.data = data
        self.id: str = data["id"]
        self.label: str = data["label"]
        self.task: str = data["task"]
        self.provider_name: str = data["provider"]
        self.model: str = data["model"]
        self.snapshot: str | None = data.get("snapshot")
        self.base_url: str = data.get("base_url") or DEFAULT_BASE_URLS.get(self.provider_name, "")
        if not self.base_url:
            raise ValueError(f"judge {self.id}: provider {self.provider_name} needs a base_url")
        self.decoding: dict[str, Any] = dict(data.get("decoding", {}))
        check_decoding(self.provider_name, self.decoding, self.id)
        self.verdict_schema: dict[str, Any] = data["verdict_schema"]
        self.unparseable_counts_as: Any = data.get("unparseable_counts_as")
        self.samples: int = int(data.get("samples", 1))
        template = data["template"]
        self.template = PromptTemplate((Path(spec_path).parent / template["path"]).resolve(), int(template["version"]))
        transport = data.get("transport", {})
        self.policy = RetryPolicy(max_retries=int(transport.get("max_retries", 4)),
                                  backoff_base_s=float(transport.get("backoff_base_s", 1.0)),
                                  backoff_max_s=float(transport.get("backoff_max_s", 30.0)))
        self.concurrency = int(transport.get("concurrency", DEFAULT_CONCURRENCY))
        self.provider = Provider(self.provider_name, self.base_url, data["api_key_env"],
                                 float(transport.get("timeout_s", DEFAULT_TIMEOUT_S)), self.id)
        self.cache = cache if cache is not None else JudgeCache()
        self._sleep = sleep
        self._rng = rng or random.Random()

    @staticmethod
    def from_spec(data: dict[str, Any], spec_path: Path | str, cache: JudgeCache | None = None, **kwargs: Any):
        """The judge of the spec's `provider` (providers.JUDGE_BACKENDS): a Judge, or an
        OfflineJudge for `provider: offline`; all have `decide()`."""
        return JUDGE_BACKENDS.create(str(data.get("provider")), data, Path(spec_path), cache, **kwargs)

    @property
    def request_model(self) -> str:
        """The model name sent to the API: the dated snapshot when the spec pins one."""
        return self.snapshot or self.model

    def key_for(self, inputs: dict[str, Any], artifacts: dict[str, str] | None = None,
                sample: int = 0) -> tuple[str, dict[str, Any]]:
        messages = self.template.render(inputs)
        components = key_components(provider=self.provider_name, model=self.model, snapshot=self.snapshot,
                                    base_url=self.base_url, template_sha256=self.template.sha256,
                                    messages=messages, decoding=self.decoding,
                                    artifacts=artifact_hashes(artifacts), sample=sample)
        return cache_key(components), components

    def decide(self, inputs: dict[str, Any], artifacts: dict[str, str] | None = None, *, sample: int = 0) -> Verdict:
        """The verdict for one input (sample k of the spec's `samples` independent calls).

        Raises CacheMiss (replay miss), MissingApiKeyError, or JudgeCallError (retries
        exhausted / permanent error); none of those is ever cached.
        """
        key, components = self.key_for(inputs, artifacts, sample)
        entry = self.cache.get(key, components)
        if entry is not None:
            return self._verdict(entry.response["text"], key, from_cache=True)
        response = self._ask(components["messages"])
        self.cache.put(key, components, response, {"judge_id": self.id, "label": self.label})
        return self._verdict(response["text"], key, from_cache=False)

    def decide_samples(self, inputs: dict[str, Any], artifacts: dict[str, str] | None = None) -> list[Verdict]:
        """`samples` independent verdicts (MTR segmentation votes over 6), each its own entry."""
        return [self.decide(inputs, artifacts, sample=k) for k in range(self.samples)]

    def _ask(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        self.provider.client()  # a missing key fails here, clearly, before any retry loop
        semaphore = provider_semaphore(self.provider_name, self.base_url, self.concurrency)

        def attempt() -> dict[str, Any]:
            with semaphore:
                return self.provider.complete(messages, self.request_model, self.decoding)

        return call_with_retries(attempt, policy=self.policy, classify=self.provider.classify,
                                 what=f"judge {self.id} ({self.provider_name} {self.request_model})",
                                 redact=self.provider.redact, sleep=self._sleep, rng=self._rng)

    def _verdict(self, raw: str, key: str, *, from_cache: bool) -> Verdict:
        value, ok, reason, data = parse_verdict(raw, self.verdict_schema, self.unparseable_counts_as)
        return Verdict(value=value, parsed_ok=ok, raw=raw, reason=reason, cache_key=key, judge_id=self.id,
                       label=self.label, from_cache=from_cache, data=data)


def load_judge(judge_id: str, cache: JudgeCache | None = None, **kwargs: Any):
    """A judge by id from the spec registry (`specs/judges/<id>.yaml`)."""
    from duplexeval.specs import Registry  # the lead's loader; validates the spec

    spec = Registry.load().get("judge", judge_id)
    return Judge.from_spec(spec.data, spec.path, cache, **kwargs)
