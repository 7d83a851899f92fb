"""An MTR-DuplexBench job of a run: dialogues -> scored rounds -> work units (forked, one-pass or replayed) -> scores.

Mirrors the Duplex-MPE plan in benchmarks/mpe/plan.py; the executor plays the units. How round k's
history reaches the model (docs/mtr.md, "Context consistency") is recorded in
context.json and results.json:
`fork` (teacher forcing, snapshot per round: linear), `replay` (teacher forcing, a fresh
session per round: quadratic, same bytes), `history-as-heard` (no teacher forcing: the
model's own replies are its history; flagged, not comparable), played `one-pass` (one
session per dialogue, each round cut at its window end: linear) or `per-round` (a fresh
session per round: quadratic) as the spec's `context.history_as_heard` says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from duplexeval.benchmarks.mtr.items import (
    context_mode,
    history_as_heard,
    item_factories,
    load_dialogues,
    scored_rounds,
)
from duplexeval.benchmarks.mtr.score import judges_for, score_bench_dir, write_rounds_file
from duplexeval.executors.base import CannotRun, JobPlan
from duplexeval.io import atomic_write_json
from duplexeval.runfolder.job_files import write_job_files

HISTORY_FLAG = ("history as heard: the model lacks teacher_forcing, so its own earlier replies are its context; "
                "not comparable with teacher-forced results")


def context_record(mode: str, played: str = "one-pass") -> dict[str, Any]:
    """context.json (and results.json's `context`); a history-as-heard job also says how its
    rounds were played (`history_as_heard`: one-pass | per-round)."""
    record: dict[str, Any] = {"mode": mode, "teacher_forcing": mode in ("fork", "replay"),
                              "flag": HISTORY_FLAG if mode == "history-as-heard" else None}
    if mode == "history-as-heard":
        record["history_as_heard"] = played
    return record


class MtrPlan(JobPlan):
    """An MTR-DuplexBench job as units: one dialogue per unit when forked (its rounds share a
    trunk) or played one-pass (its rounds are prefixes of one session), else one scored round
    per unit (a fresh session each)."""

    def __init__(self, job, bench_dir: Path, **kw):
        super().__init__(job, bench_dir, **kw)
        self.mode = context_mode(job.bench, list(job.model.data.get("capabilities", [])), self.clock)
        if self.mode == "skip":
            raise CannotRun(f"model {job.model.id} lacks teacher_forcing and the spec says skip")
        self.forked = self.mode == "fork"
        self.one_pass = self.mode == "history-as-heard" and history_as_heard(job.bench) == "one-pass"
        self.context = context_record(self.mode, history_as_heard(job.bench))
        self._scored: tuple[list, list] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "_scored": None}

    def scored(self) -> tuple[list, list]:
        """(dialogues, scored rounds); CannotRun when the data is not here or selects nothing."""
        if self._scored is None:
            from duplexeval.benchmarks.mtr.datasets import DatasetUnavailable

            bench = self.job.bench
            try:
                dialogues = load_dialogues(bench, self.limit)
            except DatasetUnavailable as exc:  # offline, or a licensed corpus not supplied: the job is not run
                raise CannotRun(str(exc)) from None
            scored = scored_rounds(bench, dialogues, judges_for(bench, self.cache_mode))
            if not scored:
                why = (f"--limit {self.limit} kept the first {len(dialogues)} dialogue(s), and none has a round this "
                       f"dimension scores; raise --limit or leave it out" if self.limit else
                       f"no rounds selected from {len(dialogues)} dialogues")
                raise CannotRun(f"benchmark {bench['id']}: {why}")
            self._scored = (dialogues, scored)
        return self._scored

    def build_groups(self) -> list:
        return item_factories(self.job.bench, self.scored()[1], teacher_forcing=self.context["teacher_forcing"])

    def resume_identity(self) -> dict[str, Any]:
        """One-pass rounds come from one session per dialogue: a folder begun per round is not
        finished that way (nor the reverse: a per-round folder has no such key and resumes as before)."""
        return {"history_as_heard": "one-pass"} if self.one_pass else {}

    def write_job_files(self) -> None:
        write_job_files(self.bench_dir, self.job, self.job.bench)
        write_rounds_file(self.bench_dir, self.scored()[1])
        atomic_write_json(self.bench_dir / "context.json", self.context)

    def summary(self) -> str:
        dialogues, scored = self.scored()
        played = f" ({self.context['history_as_heard']})" if "history_as_heard" in self.context else ""
        return f"  {len(scored)} rounds from {len(dialogues)} dialogues, context {self.mode}{played}"

    def score(self, progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
        return score_bench_dir(self.bench_dir, self.job.bench, judges_for(self.job.bench, self.cache_mode),
                               context=self.context, progress=progress)
