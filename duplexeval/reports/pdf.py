"""report.tex -> report.pdf in one command, with the passes LaTeX needs (`report --pdf`).

longtable sets its column widths from the previous pass (written to the .aux file): one
pdflatex pass leaves a header off its columns (issue 28: "three passes fix it,
undocumented"). latexmk runs as many passes as the .aux asks for; without latexmk,
pdflatex is rerun while its log says "Rerun" (at most MAX_PASSES). The TeX engine runs
with -no-shell-escape and -halt-on-error: report.tex carries model text, escaped, and a
failed compile must say so rather than leave a half-written PDF.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

MAX_PASSES = 4
TIMEOUT_S = 300


class PdfError(RuntimeError):
    """No TeX engine, or the compile failed (the message carries the end of the log)."""


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text("utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def compile_pdf(tex: Path) -> Path:
    """Compile `tex` beside itself; returns the PDF's path. Aux files stay next to it (the
    next compile starts from them and needs fewer passes)."""
    tex = Path(tex).resolve()
    folder, stem = tex.parent, tex.stem
    engine_args = ["-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape"]
    latexmk, pdflatex = shutil.which("latexmk"), shutil.which("pdflatex")
    if latexmk:
        cmd = [latexmk, "-pdf", "-quiet", f"-pdflatex=pdflatex {' '.join(engine_args)} %O %S", tex.name]
        proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        if proc.returncode != 0:
            raise PdfError(f"latexmk failed on {tex} (exit {proc.returncode}):\n{_tail(folder / f'{stem}.log')}")
        return folder / f"{stem}.pdf"
    if not pdflatex:
        raise PdfError("no TeX engine: install latexmk or pdflatex (scripts/setup-system.sh)")
    for _ in range(MAX_PASSES):
        proc = subprocess.run([pdflatex, *engine_args, tex.name], cwd=folder, capture_output=True, text=True,
                              timeout=TIMEOUT_S, check=False)
        if proc.returncode != 0:
            raise PdfError(f"pdflatex failed on {tex} (exit {proc.returncode}):\n{_tail(folder / f'{stem}.log')}")
        log = (folder / f"{stem}.log").read_text("utf-8", errors="replace")
        if "Rerun" not in log:
            break
    return folder / f"{stem}.pdf"
