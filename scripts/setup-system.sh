#!/usr/bin/env bash
# Installs the Debian packages duplexeval needs, only when they are missing, so a second
# `make test` on a set-up machine does no work here.
set -euo pipefail
need=()
command -v flite >/dev/null 2>&1 || need+=(flite)
command -v sox >/dev/null 2>&1 || need+=(sox)
command -v espeak-ng >/dev/null 2>&1 || need+=(espeak-ng)
# The report test opens report.html in headless Chromium and checks a screenshot.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# ... and compiles report.tex (booktabs, longtable: texlive-latex-recommended).
command -v pdflatex >/dev/null 2>&1 || need+=(texlive-latex-base texlive-latex-recommended)
# `report --pdf` runs latexmk (the passes longtable needs); its test reads the PDF's word
# positions with pdftotext -bbox (poppler-utils) to check Table 1's header sits on its columns.
command -v latexmk >/dev/null 2>&1 || need+=(latexmk)
command -v pdftotext >/dev/null 2>&1 || need+=(poppler-utils)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "setup: installing Debian packages: ${need[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
