"""Write new Duplex-MPE scenes with an LLM from the five attributes (§3.2).

The writer is a judge spec with task `mpe-scene-generation` (specs/judges/), called
through duplexeval.judges like every other LLM use, so each answer lands in the judge
cache under a key that includes the model, the prompt template and the inputs: a
generated set is reproducible from its cache (mode `replay`), and a cache miss in replay
is an error, not a silent re-generation.

Every answer is validated like a hand-written scene (schema, then rules: exactly one T,
T never first or last, gold answer stated earlier, N4R right after N4Q), then against the
judge spec's `scene_plan` (turn count, N4 pair count, the side of T each pair is on;
duplexeval.benchmarks.mpe.scenes.plan). A scene that
fails is not repaired: the next independent sample (its own cache entry) is tried, up to
`attempts`, and every rejection is reported with its reason.

Quotas hold across calls (issue 36). With `scene_plan.totals` each scene *index* has its
own counts (quota.py), and a scene's file name carries its index (`gen-NNNN-...`), so:
- a resumed call (the same attribute list into the same folder) keeps every scene already
  written for its index (re-checked against that index's quota) and writes only the
  missing ones; a failed index is retried there with further samples (`attempts` counts
  from sample 0, and the samples tried before replay from the judge cache);
- a partial call (`first_index`: the attribute list is scenes first_index, first_index+1,
  ...) is held to those indices' quotas, so chunks written by separate calls add up;
- a file for the index written from other attributes, or not keeping its quota, is an
  error naming it (never overwritten);
- the report says which planned indices the folder still lacks (`missing`): Table 7's
  totals hold exactly when none is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Protocol

import yaml

from duplexeval.benchmarks.mpe.scenes.loader import validate_scene_data
from duplexeval.benchmarks.mpe.scenes.model import Scene
from duplexeval.benchmarks.mpe.scenes.plan import ScenePlan
from duplexeval.benchmarks.mpe.scenes.rules import plan_problems
from duplexeval.io import atomic_write_text
from duplexeval.specs.errors import SpecError, SpecErrors

ATTRIBUTES = ("setting", "activity", "relationship", "devices", "register")


class SceneWriter(Protocol):
    """duplexeval.judges.llm.Judge: decide(inputs, artifacts, sample=k) -> Verdict."""

    id: str

    def decide(self, inputs: dict[str, Any], artifacts: dict[str, str] | None = None, *, sample: int = 0) -> Any: ...


@dataclass
class GenerationReport:
    written: list[Path] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # "scene id, sample k: reason"
    failed: list[str] = field(default_factory=list)  # scene ids without any valid sample
    kept: list[Path] = field(default_factory=list)  # scenes a previous call wrote for their index
    missing: list[int] | None = None  # planned indices (totals) the folder still lacks; None without totals

    @property
    def totals_met(self) -> bool | None:
        """Whether the folder now holds every planned scene (None: the plan has no totals)."""
        return None if self.missing is None else not self.missing


def scene_id_for(attributes: dict[str, str], index: int) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", f"{attributes['setting']} {attributes['activity']}".lower()).strip("-")
    return f"gen-{index:04d}-{slug[:40].rstrip('-')}"


def build_scene_data(answer: Any, attributes: dict[str, str], scene_id: str, writer_id: str,
                     speakers: dict[str, str], preamble: dict[str, str]) -> dict[str, Any]:
    """Scene data from the writer's verdict; voices and preamble are ours, not the LLM's."""
    if not isinstance(answer, dict) or not isinstance(answer.get("turns"), list):
        raise ValueError("the writer's verdict is not an object with a `turns` list")
    return {"id": scene_id, "source": f"generated:{writer_id}", "attributes": dict(attributes),
            "speakers": dict(speakers), "preamble": dict(preamble), "turns": answer["turns"]}


def check_plan(scene: Scene, plan: ScenePlan, index: int) -> Scene:
    """`scene` if it keeps its plan; else ValueError with every problem (turn-indexed)."""
    turns, pairs = plan.ranges_for(index)
    problems = plan_problems(scene, turns=turns, n4_pairs=pairs, placement=plan.placement_for(index))
    if problems:
        raise ValueError("; ".join(f"turns[{i}]: {m}" if i is not None else m for i, m in problems))
    return scene


def generate_scene(writer: SceneWriter, attributes: dict[str, str], index: int, *, speakers: dict[str, str],
                   preamble: dict[str, str], plan: ScenePlan, attempts: int,
                   report: GenerationReport) -> Scene | None:
    """The first sample (0..attempts-1) that passes schema, rules and plan, or None."""
    missing = [a for a in ATTRIBUTES if not attributes.get(a)]
    if missing:
        raise ValueError(f"scene {index}: attributes {missing} are missing (need {', '.join(ATTRIBUTES)})")
    scene_id = scene_id_for(attributes, index)
    inputs = {"attributes": {a: attributes[a] for a in ATTRIBUTES}, "speakers": sorted(speakers),
              "scene_index": index, **plan.prompt_inputs(index)}
    for sample in range(attempts):
        verdict = writer.decide(inputs, sample=sample)
        if not verdict.parsed_ok:
            report.rejected.append(f"{scene_id}, sample {sample}: unparseable answer ({verdict.reason})")
            continue
        try:
            data = build_scene_data(verdict.value, attributes, scene_id, writer.id, speakers, preamble)
            return check_plan(validate_scene_data(data, Path(f"<generated {scene_id} sample {sample}>")), plan, index)
        except (SpecErrors, SpecError, ValueError) as exc:
            report.rejected.append(f"{scene_id}, sample {sample}: {exc}")
    report.failed.append(scene_id)
    return None


def scene_yaml(scene: Scene) -> str:
    return ("# Duplex-MPE scene written by an LLM (duplexeval.benchmarks.mpe.scenes.generate); validated on write.\n"
            + yaml.safe_dump(scene.data, sort_keys=False, allow_unicode=True, width=100))


INDEXED = re.compile(r"^gen-(\d{4,})-.*\.yaml$")


def written_indices(out_dir: Path) -> dict[int, Path]:
    """Scene index -> the generated file a folder holds for it; two files for one index is an error."""
    out: dict[int, Path] = {}
    for path in sorted(out_dir.glob("gen-*.yaml")) if out_dir.is_dir() else []:
        m = INDEXED.match(path.name)
        if not m:
            continue
        index = int(m.group(1))
        if index in out:
            raise ValueError(f"{out_dir}: scene index {index} has two files, {out[index].name} and {path.name}; "
                             "keep one")
        out[index] = path
    return out


def _kept(path: Path, attributes: dict[str, str], index: int, plan: ScenePlan) -> Scene:
    """A scene a previous call wrote for `index`: it must be this index's (attributes, quota)."""
    from duplexeval.benchmarks.mpe.scenes.loader import load_scene

    scene = load_scene(path)
    if path.name != f"{scene_id_for(attributes, index)}.yaml" or scene.attributes != {a: attributes[a] for a in ATTRIBUTES}:
        raise ValueError(f"{path}: scene index {index} was written from other attributes than this call's "
                         f"entry {index}; generate into another folder, or pass the matching --first-index")
    try:
        return check_plan(scene, plan, index)
    except ValueError as exc:
        raise ValueError(f"{path}: does not keep scene {index}'s quota ({exc}); it was written under another "
                         "scene_plan") from None


def generate_scenes(writer: SceneWriter, attribute_sets: Iterable[dict[str, str]], out_dir: str | Path, *,
                    speakers: dict[str, str], preamble: dict[str, str], plan: ScenePlan,
                    attempts: int = 3, first_index: int = 0) -> GenerationReport:
    """Generates one scene per attribute set into `out_dir` (one YAML file each).

    `plan` comes from the writer's judge spec (`ScenePlan.from_spec`): scene k's counts and
    N4 side are `plan.ranges_for(k)` / `plan.placement_for(k)`, entry j of `attribute_sets`
    being scene `first_index + j`, so a set is reproducible from the attribute list order
    and chunks written by separate calls keep their indices' quotas. A scene the folder
    already holds for its index is kept (module docstring).
    """
    out_dir = Path(out_dir)
    report = GenerationReport()
    if first_index < 0:
        raise ValueError(f"first_index {first_index}: scene indices start at 0")
    existing = written_indices(out_dir)
    for offset, attributes in enumerate(attribute_sets):
        index = first_index + offset
        if index in existing:
            _kept(existing[index], attributes, index, plan)
            report.kept.append(existing[index])
            continue
        scene = generate_scene(writer, attributes, index, speakers=speakers, preamble=preamble, plan=plan,
                               attempts=attempts, report=report)
        if scene is not None:
            path = out_dir / f"{scene.id}.yaml"
            atomic_write_text(path, scene_yaml(scene))
            report.written.append(path)
    if plan.quotas:
        present = written_indices(out_dir)
        report.missing = [k for k in range(len(plan.quotas)) if k not in present]
    return report
