"""How numbers and untrusted text become report cells: fixed decimals, and LaTeX that
typesets anything literally (split from render.py, which builds the context and renders).

Model transcripts, judge reasons, ids and manifest values are untrusted: the LaTeX
environment escapes every `<< >>` through `latex_escape`; only `LatexSafe` strings built
here from numbers pass unescaped.
"""

from __future__ import annotations

import re
from typing import Any

import jinja2


class LatexSafe(str):
    """Trusted LaTeX produced by this module (numbers, fixed markup): not escaped."""


_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#", "%": r"\%",
    "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}", "<": r"\textless{}", ">": r"\textgreater{}",
    "|": r"\textbar{}", '"': r"\textquotedbl{}",
}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIALS))
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def latex_escape(value: Any) -> str:
    """Any text -> LaTeX that typesets it literally (no command, group or math survives)."""
    if value is None:
        return ""
    if isinstance(value, LatexSafe):
        return value
    text = _CONTROL_RE.sub(" ", str(value)).replace("\r", " ").replace("\n", " ").replace("\t", " ")
    text = _LATEX_RE.sub(lambda m: _LATEX_SPECIALS[m.group(0)], text)
    return LatexSafe(_UNTYPESETTABLE_RE.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", text))


# pdflatex with inputenc/T1 typesets Latin scripts and common punctuation; anything else
# (the MTR paper's Chinese quotes, emoji in a transcript) would stop compilation, so it
# is shown as its code point: still traceable, never a LaTeX error.
_UNTYPESETTABLE_RE = re.compile("[^\x00-\u024f\u2013\u2014\u2018\u2019\u201c\u201d\u2026\u2212\u00d7]")


def _latex_finalize(value: Any) -> Any:
    return latex_escape(value)


def fmt(value: Any, decimals: int = 4) -> str:
    """Numbers as the papers print them (fixed decimals); None as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) >= 1 and decimals == 0:
            return str(int(value))
        if value != 0 and abs(value) < 10 ** -decimals:
            return f"{value:.2g}"
        return f"{value:.{decimals}f}"
    return str(value)


@jinja2.pass_context
def _latex_caveat_mark(ctx: Any, model: Any) -> LatexSafe:
    """A dagger after a caveated model's name in every table; the caveat itself is listed up front."""
    return LatexSafe(r"\textsuperscript{\dag}" if model in (ctx.get("caveats") or {}) else "")


def latex_rate(m: dict[str, Any] | None) -> LatexSafe:
    """'0.9500 (1900/2000)': a metric always beside its numerator/denominator."""
    if not m:
        return LatexSafe("--")
    tex = lambda v, d: latex_escape(fmt(v, d)).replace("–", "--")  # noqa: E731
    return LatexSafe(f"{tex(m.get('value'), 4)} {{\\footnotesize({tex(m.get('numerator'), 0)}/{tex(m.get('denominator'), 0)})}}"
                     + latex_lost(m))


def latex_lost(m: dict[str, Any] | None) -> str:
    """The incomplete mark of a cell whose denominator lost units to item errors (issue 25)."""
    lost = (m or {}).get("lost")
    return f" {{\\footnotesize\\textbf{{[incomplete: {_tex_num(lost, 0)} error]}}}}" if lost else ""


def _tex_num(value: Any, decimals: int) -> str:
    return latex_escape(fmt(value, decimals)).replace("–", "--")


def latex_pct(m: dict[str, Any] | None) -> LatexSafe:
    """A rate in percent, one decimal, as MTR prints it; '*' when withheld and computed from counts."""
    if m and m.get("value") is not None:
        return LatexSafe(_tex_num(m["value"] * 100, 1))
    if m and m.get("denominator"):
        return LatexSafe(_tex_num(m["numerator"] / m["denominator"] * 100, 1) + "*")
    return LatexSafe("--")


def latex_pub(p: dict[str, Any] | None) -> LatexSafe:
    """A published (golden) cell and its delta: green within tolerance, red outside, black unjudged."""
    if not p:
        return LatexSafe("--")
    out = _tex_num(p.get("value"), p["decimals"] if p.get("decimals") is not None else 4)
    if p.get("delta") is not None:
        colour = {True: "within", False: "outside"}.get(p.get("within"))
        delta = latex_escape("%+.4g" % p["delta"])
        delta = f"$\\Delta${delta}"
        out += " " + (f"\\textcolor{{{colour}}}{{{delta}}}" if colour else delta)
    return LatexSafe(out)


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
        value = lambda m: _tex_num(m.get("value"), 2) if m else "--"  # noqa: E731
        lines = [f"{value(r1)} $\\rightarrow$ {value(mean)}"]
        lines.append(f"n={_tex_num((r1 or {}).get('denominator'), 0)} $\\rightarrow$ "
                     f"n={_tex_num((mean or {}).get('denominator'), 0)}")
    else:
        lines = [f"{latex_pct(r1)} $\\rightarrow$ {latex_pct(mean)}"]
    if r1 and mean and c.get("unit") != "score":
        lines.append(f"{_tex_num(r1.get('numerator'), 0)}/{_tex_num(r1.get('denominator'), 0)} $\\rightarrow$ "
                     f"{_tex_num(mean.get('numerator'), 0)}/{_tex_num(mean.get('denominator'), 0)}")
    lat = c.get("latency")
    if lat and lat.get("value") is not None:
        lines.append(f"latency {_tex_num(lat['value'], 2)} s (n={_tex_num(lat.get('denominator'), 0)})")
    nr = c.get("no_response")
    if nr and nr.get("numerator"):
        lines.append(f"no response {_tex_num(nr['numerator'], 0)}/{_tex_num(nr.get('denominator'), 0)}")
    if (r1 or {}).get("lost") or (mean or {}).get("lost"):
        lines.append(f"\\textbf{{incomplete: {_tex_num((r1 or {}).get('lost', 0), 0)} $\\rightarrow$ "
                     f"{_tex_num((mean or {}).get('lost', 0), 0)} error}}")
    if len(lines) == 1:
        return LatexSafe(lines[0])
    small = "\\\\".join("{\\footnotesize " + x + "}" for x in lines[1:])
    return LatexSafe(f"\\shortstack[r]{{{lines[0]}\\\\{small}}}")
