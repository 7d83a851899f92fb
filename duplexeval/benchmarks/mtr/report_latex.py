"""MTR-DuplexBench's LaTeX cells: a rate in percent as the paper prints it, and the main
table's 'round 1 -> rounds 1-N' cell (the section registers them as the `pct` and `mtrcell`
filters of its templates)."""

from __future__ import annotations

from typing import Any

from duplexeval.reports.formatting import LatexSafe, latex_pub, tex_num


def latex_pct(m: dict[str, Any] | None) -> LatexSafe:
    """A rate in percent, one decimal, as MTR prints it; '*' when withheld and computed from counts."""
    if m and m.get("value") is not None:
        return LatexSafe(tex_num(m["value"] * 100, 1))
    if m and m.get("denominator"):
        return LatexSafe(tex_num(m["numerator"] / m["denominator"] * 100, 1) + "*")
    return LatexSafe("--")


def latex_mtr_cell(c: dict[str, Any] | None, golden: bool = False) -> LatexSafe:
    """One MTR main-table cell, stacked: 'r1 -> 1-N' in %, counts, latency, no-response
    (or, with golden=True, the published 'r1 -> 1-N' pair)."""
    if not c:
        return LatexSafe("--")
    if golden:
        if not (c.get("pub_r1") or c.get("pub_mean")):
            return LatexSafe("--")
        return LatexSafe(f"{latex_pub(c.get('pub_r1'))} $\\rightarrow$ {latex_pub(c.get('pub_mean'))}")
    r1, mean = c.get("r1"), c.get("mean")
    if c.get("unit") == "score":  # a mean score (quality 0-5), not a rate: no percent, its n
        value = lambda m: tex_num(m.get("value"), 2) if m else "--"  # noqa: E731
        lines = [f"{value(r1)} $\\rightarrow$ {value(mean)}"]
        lines.append(f"n={tex_num((r1 or {}).get('denominator'), 0)} $\\rightarrow$ "
                     f"n={tex_num((mean or {}).get('denominator'), 0)}")
    else:
        lines = [f"{latex_pct(r1)} $\\rightarrow$ {latex_pct(mean)}"]
    if r1 and mean and c.get("unit") != "score":
        lines.append(f"{tex_num(r1.get('numerator'), 0)}/{tex_num(r1.get('denominator'), 0)} $\\rightarrow$ "
                     f"{tex_num(mean.get('numerator'), 0)}/{tex_num(mean.get('denominator'), 0)}")
    lat = c.get("latency")
    if lat and lat.get("value") is not None:
        lines.append(f"latency {tex_num(lat['value'], 2)} s (n={tex_num(lat.get('denominator'), 0)})")
    nr = c.get("no_response")
    if nr and nr.get("numerator"):
        lines.append(f"no response {tex_num(nr['numerator'], 0)}/{tex_num(nr.get('denominator'), 0)}")
    if (r1 or {}).get("lost") or (mean or {}).get("lost"):
        lines.append(f"\\textbf{{incomplete: {tex_num((r1 or {}).get('lost', 0), 0)} $\\rightarrow$ "
                     f"{tex_num((mean or {}).get('lost', 0), 0)} error}}")
    if len(lines) == 1:
        return LatexSafe(lines[0])
    small = "\\\\".join("{\\footnotesize " + x + "}" for x in lines[1:])
    return LatexSafe(f"\\shortstack[r]{{{lines[0]}\\\\{small}}}")


def _incomplete(m: dict[str, Any] | None) -> str:
    lost = (m or {}).get("lost")
    return f" {{\\footnotesize\\textbf{{[incomplete: {tex_num(lost, 0)} error]}}}}" if lost else ""


def latex_mtr_value(c: dict[str, Any] | None, which: str) -> LatexSafe:
    """One value of a main-table cell (`which`: 'r1' or 'mean'): the rate in % (a score as a
    mean) with its counts in small type, and its incomplete mark: one value per LaTeX cell."""
    m = (c or {}).get(which)
    if not m:
        return LatexSafe("--")
    if (c or {}).get("unit") == "score":
        return LatexSafe(f"{tex_num(m.get('value'), 2)} {{\\tiny(n={tex_num(m.get('denominator'), 0)})}}" + _incomplete(m))
    return LatexSafe(f"{latex_pct(m)} {{\\tiny({tex_num(m.get('numerator'), 0)}/{tex_num(m.get('denominator'), 0)})}}"
                     + _incomplete(m))


def latex_mtr_latency(c: dict[str, Any] | None) -> LatexSafe:
    lat = (c or {}).get("latency")
    if not lat or lat.get("value") is None:
        return LatexSafe("--")
    return LatexSafe(f"{tex_num(lat['value'], 2)} {{\\tiny(n={tex_num(lat.get('denominator'), 0)})}}")


def latex_mtr_no_response(c: dict[str, Any] | None) -> LatexSafe:
    nr = (c or {}).get("no_response")
    if not nr or nr.get("numerator") is None:
        return LatexSafe("--")
    return LatexSafe(f"{tex_num(nr['numerator'], 0)}/{tex_num(nr.get('denominator'), 0)}")
