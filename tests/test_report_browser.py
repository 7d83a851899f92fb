"""The report in a real browser (Playwright driving Debian's Chromium, never a downloaded one).

Opens report.html from file:// at 1400x900, checks that the first screen holds the
headline tables, filters the item browser to failed Shush windows, clicks one and checks
that the audio element seeked into that window. Screenshots are kept as artifacts in
$DUPLEXEVAL_ARTIFACTS (default: test-artifacts/report-browser/).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from report_fixture import HOSTILE_HTML, make_run

from duplexeval.benchmarks import plugins
from duplexeval.reports.golden import golden_dir
from duplexeval.reports.render import write_report

if os.environ.get("CI") == "true":
    import playwright.sync_api as playwright  # in CI the browser test must run, never skip (make setup installs it)
else:
    playwright = pytest.importorskip("playwright.sync_api", reason="the Python playwright package is not installed")
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(os.environ.get("DUPLEXEVAL_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts")) / "report-browser"
VIEWPORT = {"width": 1400, "height": 900}

pytestmark = pytest.mark.skipif(CHROMIUM is None and os.environ.get("CI") != "true",
                                reason="Chromium is not installed (scripts/setup-system.sh installs it)")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    run = make_run(tmp_path_factory.mktemp("runs"), with_audio=True)
    html = write_report(run, families=plugins(), golden_paths=[golden_dir() / "embedded.yaml"])["html"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pg = browser.new_page(viewport=VIEWPORT)
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.goto(html.resolve().as_uri())
        pg.wait_for_selector("#records-body tr")
        pg.errors = errors
        yield pg
        browser.close()


def _on_first_screen(page, selector: str) -> None:
    box = page.locator(selector).bounding_box()
    assert box is not None, f"{selector} is not rendered"
    assert box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"], (selector, box)
    assert box["x"] >= 0 and box["x"] + box["width"] <= VIEWPORT["width"], (selector, box)


def test_first_screen_holds_the_headline_tables(page) -> None:
    page.screenshot(path=str(ARTIFACTS / "first-screen.png"))
    for sel in ("#verdict", "#mpe-table3", "#mpe-table9", "#mtr-main"):
        _on_first_screen(page, sel)
    assert "Start" in page.inner_text("#mpe-table3") and "Smooth turn-taking" in page.inner_text("#mtr-main")
    # The details come after, collapsed.
    assert page.locator("details#judges").get_attribute("open") is None
    assert not page.errors, page.errors


def test_filter_then_click_a_failed_window_seeks_the_audio(page) -> None:
    page.select_option("#f-metric", "shush")
    page.select_option("#f-verdict", "fail")
    page.select_option("#f-model", "oracle")
    rows = page.locator("#records-body tr")
    assert rows.count() == 1, page.inner_text("#records-body")
    assert "Nine dollars." in rows.first.inner_text()
    assert page.inner_text("#records-count").startswith("1 of ")
    rows.first.click()
    page.wait_for_selector("#item-view:not([hidden])")
    # The failed Shush window of the fixture is [16.0, 18.5]; click it on the timeline.
    page.locator("#item-timeline .seg.win.verdict-fail").first.click()
    page.wait_for_function("() => { const a = document.getElementById('player');"
                           " return a.readyState >= 1 && a.currentTime >= 15.99 && a.currentTime <= 18.5; }", timeout=15000)
    t = page.evaluate("document.getElementById('player').currentTime")
    assert 16.0 - 0.01 <= t <= 18.5, t
    page.screenshot(path=str(ARTIFACTS / "item-browser.png"), full_page=False)
    page.locator("#item-view").screenshot(path=str(ARTIFACTS / "item-view.png"))
    # A window of another metric seeks elsewhere: the Start window [9.0, 14.0].
    page.locator("#item-timeline .seg.win", has_text="start").first.click()
    page.wait_for_function("() => Math.abs(document.getElementById('player').currentTime - 9.0) < 0.05", timeout=15000)
    assert not page.errors, page.errors


def test_planted_script_in_a_transcript_does_not_run(page) -> None:
    assert page.evaluate("typeof window.alert") == "function"
    page.fill("#f-text", "taco place")
    page.select_option("#f-metric", "")
    page.select_option("#f-verdict", "")
    text = page.inner_text("#records-body")
    assert HOSTILE_HTML in text  # shown as text, not parsed as markup
    assert page.locator("#records-body script").count() == 0


def test_a_table_3_cell_leads_to_its_records_then_to_an_item_whose_audio_plays(page) -> None:
    """Issue 28 item 2: from a number to its audio in two clicks."""
    link = page.locator('#paper-mpe-t3 a.records-link[data-model="oracle"][data-benchmark="mpe-explicit"]'
                        '[data-metric="start"]')
    link.click()
    assert page.input_value("#f-model") == "oracle" and page.input_value("#f-benchmark") == "mpe-explicit"
    assert page.input_value("#f-metric") == "start"
    rows = page.locator("#records-body tr")
    assert rows.count() >= 1
    for i in range(rows.count()):
        cells = rows.nth(i).locator("td")
        assert [cells.nth(k).inner_text() for k in (0, 1, 3)] == ["oracle", "mpe-explicit", "start"]
    rows.first.click()
    page.wait_for_selector("#item-view:not([hidden])")
    assert "channel 1" in page.inner_text("#channels")  # the item view names the channels
    page.wait_for_function("() => document.getElementById('player').readyState >= 1", timeout=15000)
    start = page.evaluate("document.getElementById('player').currentTime")
    assert abs(start - 9.0) < 0.05, start   # seeked to the Start window [9.0, 14.0]
    page.evaluate("document.getElementById('player').play()")
    page.wait_for_function(f"() => document.getElementById('player').currentTime > {start} + 0.2", timeout=15000)
    page.screenshot(path=str(ARTIFACTS / "table-cell-to-audio.png"))
    assert not page.errors, page.errors
