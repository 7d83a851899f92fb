"""Golden files: every shipped file validates, and a broken one is named by file:line:field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from duplexeval.reports.golden import golden_dir, golden_files, load_golden
from duplexeval.specs.errors import SpecErrors

GOOD_CELL = """\
schema: duplexeval.golden/1
paper:
  id: toy
  title: Toy
  source_file: nowhere.txt
cells:
  - id: toy.a
    paper: toy
    table: Table 1
    row: model
    column: Start
    value: 0.5
    tolerance: {tolerance}
    source: 'Table 1: "0.5"'
"""


def write(tmp_path: Path, text: str, name: str = "toy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_every_shipped_golden_file_validates() -> None:
    files = golden_files()
    assert {p.name for p in files} >= {"duplex-mpe.yaml", "mtr-duplexbench.yaml", "embedded.yaml"}
    for path in files:
        golden = load_golden(path)
        assert golden.cells, path


def test_every_cell_quotes_its_source_and_names_its_paper() -> None:
    for path in golden_files():
        golden = load_golden(path)
        for cell in golden.cells:
            assert cell.paper == golden.paper["id"], cell.id
            assert cell.source.strip(), cell.id


def test_published_numbers_are_in_the_mpe_golden() -> None:
    g = load_golden(golden_dir() / "duplex-mpe.yaml")
    assert g.value("mpe.t16.minicpm-o.p") == 0.3961
    assert g.value("mpe.t16.voila.p") == 0.2365
    assert g.value("mpe.t3.voila.explicit.stop") == 0.8484
    assert g["mpe.t3.voila.explicit.stop"].denominator == 620
    assert g.value("mpe.t9.freeze-omni.already-speaking") == 1486
    assert g.value("mpe.s45.spearman-presence-start") == -0.4303
    assert g.value("mpe.t7.turns") == 26182


def test_mtr_golden_holds_the_main_table_and_the_ablation() -> None:
    g = load_golden(golden_dir() / "mtr-duplexbench.yaml")
    main = [c for c in g.cells if c.id.startswith("mtr.main.")]
    assert len(main) == 4 * 4 * 2  # models x features x (round 1, rounds 1-10)
    assert g.value("mtr.main.freeze-omni.background.r1to10") == 1.1
    assert [g.value(f"mtr.ablation.moshi.{c}.r1to10") for c in ("s", "si", "sip", "sipb")] == [57.4, 54.5, 54.3, 37.6]


def test_a_string_tolerance_is_named_by_file_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_CELL.format(tolerance="small"))
    with pytest.raises(SpecErrors) as exc:
        load_golden(path)
    message = str(exc.value)
    assert "toy.yaml:13:" in message
    assert "cells[0].tolerance" in message


def test_an_unknown_key_is_named_with_a_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_CELL.format(tolerance="0.1").replace("    source:", "    tolerence: 1\n    source:"))
    with pytest.raises(SpecErrors) as exc:
        load_golden(path)
    assert "toy.yaml:14: cells[0].tolerence: unknown key (did you mean 'tolerance'?)" in str(exc.value)


def test_a_duplicate_cell_id_names_both_lines(tmp_path: Path) -> None:
    text = GOOD_CELL.format(tolerance="0.1")
    cell = text[text.index("  - id:"):]
    path = write(tmp_path, text + cell)
    with pytest.raises(SpecErrors) as exc:
        load_golden(path)
    assert "toy.yaml:15: cells[1].id: duplicate cell id 'toy.a' (first on line 7)" in str(exc.value)


def test_value_together_with_bounds_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_CELL.format(tolerance="0.1").replace("    source:", "    bounds: {min: 0.1}\n    source:"))
    with pytest.raises(SpecErrors) as exc:
        load_golden(path)
    assert "toy.yaml:" in str(exc.value) and "cells[0]" in str(exc.value)


def test_bad_yaml_is_named_by_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_CELL.format(tolerance="[0.1"))
    with pytest.raises(SpecErrors) as exc:
        load_golden(path)
    assert "toy.yaml:" in str(exc.value) and "invalid YAML" in str(exc.value)


def test_bounds_min_above_max_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load(GOOD_CELL.format(tolerance="0.1"))
    cell = data["cells"][0]
    del cell["value"], cell["tolerance"]
    cell["bounds"] = {"min": 0.9, "max": 0.1}
    path = write(tmp_path, yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(SpecErrors) as exc:
        load_golden(path)
    assert "cells[0].bounds: min > max" in str(exc.value)
