"""The HTML report opens in headless Chromium with no server and its tables are visible."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from report_fixture import make_run

from duplexeval.benchmarks import plugins
from duplexeval.reports.golden import golden_dir
from duplexeval.reports.render import write_report

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def png_rows(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and raw scanlines of an 8-bit RGB/RGBA PNG (enough to count colours)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    channels = {2: 3, 6: 4}[colour]
    stride = width * channels + 1
    return width, height, [raw[i * stride + 1:(i + 1) * stride] for i in range(height)]


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (the lead adds it to scripts/setup-system.sh)")
def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    html = write_report(run, families=plugins(), golden_paths=[golden_dir() / "embedded.yaml"])["html"]
    shot = tmp_path / "shot.png"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
           f"--screenshot={shot}", "--window-size=1280,2000", html.resolve().as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=60, check=False)
    assert shot.is_file(), "Chromium wrote no screenshot"
    data = shot.read_bytes()
    assert len(data) > 20_000  # a blank page compresses to a few kB
    width, height, rows = png_rows(data)
    assert (width, height) == (1280, 2000)
    # Tables and charts mean many distinct rows of pixels, not one background colour.
    distinct_rows = len(set(rows))
    assert distinct_rows > 300, distinct_rows
