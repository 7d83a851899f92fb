"""Majority-vote clustering of repeated turn segmentations (MTR-DuplexBench, 方法详解 1).

The paper asks GPT-4o for the user turns 6 times; a candidate turn joins a cluster when
their time overlap is >= 30 %, a cluster survives on a majority of votes, and its start
and end are the medians of its members (`center`); then overlapping turns are resolved. Every
parameter comes from the spec's `segmentation` block; these functions are pure.

Choices the paper leaves open (ours, docs/mtr.md):
- overlap basis `shorter`: intersection / duration of the shorter of the two spans
  (`union` and `candidate` are offered);
- a candidate is compared with the cluster's current median span, joins the cluster it
  overlaps most, and a vote puts at most one turn in a cluster (its next best cluster, or
  a new one, otherwise);
- `majority` means MORE than half of the valid votes (4 of 6; an even split, 3 of 6, does
  not survive); `half-or-more` accepts 3 of 6; `any` keeps every cluster; unparseable
  votes drop out of the count;
- overlap resolution: two surviving turns that still overlap by the threshold or more
  keep only the one with more votes (ties: the earlier); a smaller overlap is cut at its
  midpoint.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

SURVIVAL = ("majority", "half-or-more", "any")
BASES = ("shorter", "union", "candidate")
CENTERS = ("median", "mean")  # segmentation.center: the paper's median, or the mean (ours)


@dataclass
class Cluster:
    members: list[tuple[int, float, float]] = field(default_factory=list)  # (vote, start, end)
    center: str = "median"

    def _center(self, values) -> float:
        return float(statistics.median(values) if self.center == "median" else statistics.fmean(values))

    @property
    def start(self) -> float:
        return self._center([m[1] for m in self.members])

    @property
    def end(self) -> float:
        return self._center([m[2] for m in self.members])

    @property
    def votes(self) -> set[int]:
        return {m[0] for m in self.members}


@dataclass(frozen=True)
class Turn:
    start: float
    end: float
    votes: int

    def as_dict(self) -> dict:
        return {"start": round(self.start, 3), "end": round(self.end, 3), "votes": self.votes}


def overlap_share(a: tuple[float, float], b: tuple[float, float], basis: str = "shorter") -> float:
    """Time overlap of span `a` (the candidate) and `b`, as a share of the basis span."""
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    if basis == "shorter":
        den = min(a[1] - a[0], b[1] - b[0])
    elif basis == "union":
        den = max(a[1], b[1]) - min(a[0], b[0])
    elif basis == "candidate":
        den = a[1] - a[0]
    else:
        raise ValueError(f"overlap basis must be one of {BASES}, got {basis!r}")
    return inter / den if den > 0 else 0.0


def survives(n_votes_in_cluster: int, n_valid_votes: int, rule: str) -> bool:
    if rule == "majority":
        return 2 * n_votes_in_cluster > n_valid_votes
    if rule == "half-or-more":
        return 2 * n_votes_in_cluster >= n_valid_votes
    if rule == "any":
        return n_votes_in_cluster >= 1
    raise ValueError(f"survival must be one of {SURVIVAL}, got {rule!r}")


def cluster_votes(votes: list[list[tuple[float, float]] | None], *, overlap_threshold: float,
                  overlap_basis: str = "shorter", survival: str = "majority", center: str = "median") -> list[Turn]:
    """Turns agreed by the votes (None = an unparseable vote, left out of the count), in time order.

    `center` (spec segmentation.center): a cluster's start and end are the median (paper)
    or the mean of its members'."""
    if center not in CENTERS:
        raise ValueError(f"segmentation.center must be one of {CENTERS}, got {center!r}")
    valid = [(k, v) for k, v in enumerate(votes) if v is not None]
    candidates = sorted(((k, float(s), float(e)) for k, v in valid for s, e in v if e > s), key=lambda c: (c[1], c[2], c[0]))
    clusters: list[Cluster] = []
    for vote, start, end in candidates:
        scored = [(overlap_share((start, end), (c.start, c.end), overlap_basis), i) for i, c in enumerate(clusters)]
        scored = sorted(((s, i) for s, i in scored if s >= overlap_threshold and vote not in clusters[i].votes),
                        key=lambda x: (-x[0], x[1]))
        if scored:
            clusters[scored[0][1]].members.append((vote, start, end))
        else:
            clusters.append(Cluster([(vote, start, end)], center))
    kept = [Turn(c.start, c.end, len(c.votes)) for c in clusters if survives(len(c.votes), len(valid), survival)]
    return resolve_overlaps(kept, overlap_threshold=overlap_threshold, overlap_basis=overlap_basis)


def resolve_overlaps(turns: list[Turn], *, overlap_threshold: float, overlap_basis: str = "shorter") -> list[Turn]:
    """Non-overlapping turns in time order (rule in the module docstring)."""
    out: list[Turn] = []
    for t in sorted(turns, key=lambda t: (t.start, t.end)):
        if out and t.start < out[-1].end:
            prev = out[-1]
            if overlap_share((t.start, t.end), (prev.start, prev.end), overlap_basis) >= overlap_threshold:
                if t.votes > prev.votes:
                    out[-1] = t
                continue
            cut = (t.start + prev.end) / 2
            out[-1] = Turn(prev.start, cut, prev.votes)
            t = Turn(cut, t.end, t.votes)
        out.append(t)
    return out


def response_windows(turns: list[Turn], audio_end: float) -> list[tuple[float, float]]:
    """Assistant response window of each user turn: its start to the next user turn's end (paper);
    the last runs to the end of the audio."""
    return [(t.start, turns[i + 1].end if i + 1 < len(turns) else audio_end) for i, t in enumerate(turns)]
