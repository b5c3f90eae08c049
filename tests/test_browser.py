"""The offline HTML book in headless Chromium: pages load cleanly, figures draw, sliders move.

Builds the offline book from the committed, executed notebooks into a temporary folder, serves
it on localhost and opens every chapter in Debian's Chromium (driven by Playwright). `make
test` installs Chromium when it is missing; without it this test fails rather than skips.
"""

import functools
import http.server
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def book_url(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, str(ROOT / "tools" / "build_book.py"), "--offline", "--output", str(site)],
                   check=True, capture_output=True)
    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    assert Path(executable).exists(), "Chromium is missing: run `make test`, which installs it"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def chapter_pages():
    return [p.stem + ".html" for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]


def open_page(browser, url):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("requestfailed", lambda request: errors.append(f"request failed: {request.url}"))
    page.goto(url, wait_until="load")
    return page, errors


@pytest.mark.browser
@pytest.mark.parametrize("name", ["index.html", "setup.html", *chapter_pages(), "references.html"])
def test_page_loads_and_every_figure_draws(browser, book_url, name):
    page, errors = open_page(browser, f"{book_url}/{name}")
    n_figures = page.locator(".plotly-figure").count()
    if name in chapter_pages():
        assert n_figures > 0, "a chapter page without figures"
    page.wait_for_function(
        "() => [...document.querySelectorAll('.plotly-figure')].every(d => d.querySelector('.main-svg'))",
        timeout=60_000)
    assert page.locator("nav.toc a").count() >= len(chapter_pages()) + 2
    if page.locator(".math").count():
        assert page.locator(".math .katex").count() == page.locator(".math").count(), "math not typeset"
    assert not errors, errors
    page.close()


@pytest.mark.browser
def test_perturbation_slider_changes_the_plotted_data(browser, book_url):
    page, errors = open_page(browser, f"{book_url}/01_handcrafted_bfs.html")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.plotly-figure')].every(d => d.querySelector('.main-svg'))",
        timeout=60_000)
    figure_id = page.evaluate("""() => [...document.querySelectorAll('.plotly-figure')].find(
        d => (d.layout.sliders || []).some(s => (s.currentvalue.prefix || '').includes('perturbation scale'))).id""")
    visible_data = f"""() => document.getElementById('{figure_id}').data
        .filter(t => t.visible === true).map(t => Array.from(t.y))"""
    before = page.evaluate(visible_data)
    # Drag the slider's grip to the right end of its rail (the largest scale), as a reader would.
    page.locator(f"#{figure_id} .slider-rail-rect").scroll_into_view_if_needed()
    grip = page.locator(f"#{figure_id} .slider-grip-rect").bounding_box()
    rail = page.locator(f"#{figure_id} .slider-rail-rect").bounding_box()
    page.mouse.move(grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2)
    page.mouse.down()
    page.mouse.move(rail["x"] + rail["width"], grip["y"] + grip["height"] / 2, steps=10)
    page.mouse.up()
    page.wait_for_timeout(500)
    after = page.evaluate(visible_data)
    assert before and after and before != after
    assert not errors, errors
    page.close()
