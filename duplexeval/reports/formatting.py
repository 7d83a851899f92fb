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
# (a paper's Chinese quotes, emoji in a transcript) would stop compilation, so it
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
    return f" {{\\footnotesize\\textbf{{[incomplete: {tex_num(lost, 0)} error]}}}}" if lost else ""


def tex_num(value: Any, decimals: int) -> str:
    return latex_escape(fmt(value, decimals)).replace("–", "--")


def latex_pub(p: dict[str, Any] | None) -> LatexSafe:
    """A published (golden) cell and its delta: green within tolerance, red outside, black unjudged."""
    if not p:
        return LatexSafe("--")
    out = tex_num(p.get("value"), p["decimals"] if p.get("decimals") is not None else 4)
    if p.get("delta") is not None:
        within = p.get("within")
        colour = None if within is None else ("within" if within else "outside")
        delta = latex_escape("%+.4g" % p["delta"])
        delta = f"$\\Delta${delta}"
        out += " " + (f"\\textcolor{{{colour}}}{{{delta}}}" if colour else delta)
    return LatexSafe(out)
