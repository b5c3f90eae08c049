"""The HTML book in headless Chromium: pages load cleanly and ask no other site for anything,
figures draw, math is typeset, nothing overflows its column, every figure keeps its legend and
texts apart at a desk's and a phone's width and follows the dark theme, search and sliders work.

Builds the book (tools/build_book.py: Sphinx with MyST-NB) from the committed, executed
notebooks into a temporary folder, serves it on localhost and opens every page in Debian's
Chromium (driven by Playwright); then drives the live sliders in JupyterLab. `make test`
installs Chromium when it is missing; without it this test fails rather than skips.
"""

import contextlib
import functools
import http.server
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from lib.book.live import RUN_BUTTON

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import build_book  # noqa: E402  (a script folder, not a package)

CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def book_url(tmp_path_factory):
    """The book built from this checkout, served on localhost; with BOOK_HTML set, the book built
    before in that folder instead (say an older commit's, to see which checks fail on it)."""
    folder = tmp_path_factory.mktemp("book")
    if os.environ.get("BOOK_HTML"):
        shutil.copytree(os.environ["BOOK_HTML"], folder / "html")
    else:
        build_book.build(folder / "html", stage=folder / "stage")

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(QuietHandler, directory=str(folder / "html"))
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


#: A desktop and a phone width, in CSS pixels.
WIDTHS = {"desktop": 1400, "phone": 420}

FIGURES_DRAWN = "() => [...document.querySelectorAll('.plotly-graph-div')].every(d => d.querySelector('.main-svg'))"
MATH_TYPESET = """() => window.MathJax && MathJax.startup && MathJax.startup.promise &&
    MathJax.startup.promise.then(() => true)"""


def open_page(browser, book_url, name, width="desktop"):
    """The page `name` at `width`, loaded with its figures drawn and its math typeset, and the
    list of what went wrong on the way: console errors, failed requests, and every request
    for anything not on the book's own site."""
    page = browser.new_page(viewport={"width": WIDTHS[width], "height": 900})
    problems = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("requestfailed", lambda request: problems.append(f"request failed: {request.url}"))
    page.on("response", lambda response: problems.append(f"{response.status}: {response.url}")
            if response.status >= 400 else None)
    page.on("request", lambda request: None if request.url.startswith((book_url + "/", "data:", "blob:"))
            else problems.append(f"request outside the site: {request.url}"))
    page.goto(f"{book_url}/{name}", wait_until="load", timeout=120_000)   # a long chapter on a busy machine
    page.wait_for_function(FIGURES_DRAWN, timeout=60_000)
    page.evaluate(MATH_TYPESET)
    # the figure script (tools/sphinx/_static/plotly-figures.js) lays every figure out for the width
    page.wait_for_function("() => document.documentElement.dataset.figuresFitted === 'true'", timeout=60_000)
    return page, problems


@pytest.mark.browser
@pytest.mark.parametrize("name", ["index.html", "setup.html", *chapter_pages(), "references.html"])
def test_page_loads_draws_its_figures_and_typesets_its_math_from_the_site_alone(browser, book_url, name):
    page, problems = open_page(browser, book_url, name)
    if name in chapter_pages():
        assert page.locator(".plotly-graph-div").count() > 0, "a chapter page without figures"
    math = page.locator(".math").count()
    assert page.locator(".math mjx-container").count() == math, "math not typeset"
    assert not problems, problems
    page.close()


# --- Figures: one style that fits a desk and a phone, in light and dark ----------------------

#: Every defect of every plotly figure on the page, one string each ("<figure>: <defect>"):
#: a legend (its box) outside the figure's visible box (the figure's div, clipped by any
#: scrolling block around it), a legend that scrolls inside itself, a legend entry listed twice,
#: two text boxes of one figure overlapping (titles, axis titles, tick labels, annotations,
#: legend and slider texts; rotated text as its rotated box), an axis label over a plot area
#: (a long tick label under the neighbouring subplot) and a text box reaching past the
#: figure's visible box. Text drawn inside the plot by a trace (heatmap cells, point labels)
#: and the hover layer are not counted for overlaps; but a heatmap's cell text smaller than
#: `LEAST_CELL_TEXT` px (plotly shrinks it to fit its cell), an axis's zero line drawn through a
#: heatmap's cells, and a zero line within 3% of its axis's end (over the other axis's line, or
#: floating over the plot's floor) are defects.
LEAST_CELL_TEXT = 8
FIGURE_DEFECTS = """() => {
    const TOLERANCE = 1.5;   // px: boxes that touch or graze do not count
    const corners = el => {
        const b = el.getBBox(), m = el.getScreenCTM();
        if (!m || b.width < 1 || b.height < 1) return null;
        return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
            .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]); };
    const overlap = (p, q) => {      // separating axes of two convex quadrilaterals
        for (const poly of [p, q]) for (let i = 0; i < 4; i++) {
            const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4], n = [y1 - y2, x2 - x1];
            const len = Math.hypot(...n); if (len === 0) continue;
            const project = s => s.map(([x, y]) => (x * n[0] + y * n[1]) / len);
            const a = project(p), b = project(q);
            if (Math.min(Math.max(...a), Math.max(...b)) - Math.max(Math.min(...a), Math.min(...b)) <= TOLERANCE)
                return false; }
        return true; };
    const shown = (el, root) => {
        for (let e = el; e && e !== root; e = e.parentElement) {
            const style = getComputedStyle(e);
            if (style.display === 'none' || style.visibility === 'hidden' || style.opacity === '0') return false; }
        return true; };
    const label = el => {
        const kind = el.closest('.legend') ? 'legend' : el.closest('.slider-container') ? 'slider'
            : el.closest('.annotation') ? 'annotation' : el.closest('.colorbar') ? 'colour bar'
            : (el.getAttribute('class') || '').endsWith('title') ? el.getAttribute('class')
            : el.parentElement.getAttribute('class') || 'text';
        return `${kind} "${el.textContent.slice(0, 40)}"`; };
    const defects = [];
    [...document.querySelectorAll('.plotly-graph-div')].forEach((div, index) => {
        const title = div.layout.title && (div.layout.title.text || div.layout.title);
        const name = `figure ${index + 1}` + (typeof title === 'string' && title
            ? ` ("${title.replace(/<[^>]*>/g, ' ').slice(0, 50)}")` : '');
        let box = div.getBoundingClientRect();
        box = {left: box.left, top: box.top, right: box.right, bottom: box.bottom};
        for (let e = div.parentElement; e && e.tagName !== 'BODY'; e = e.parentElement) {
            const style = getComputedStyle(e);
            if (style.overflowX !== 'visible' || style.overflowY !== 'visible') {
                const r = e.getBoundingClientRect();
                box = {left: Math.max(box.left, r.left), top: Math.max(box.top, r.top),
                       right: Math.min(box.right, r.left + e.clientWidth), bottom: Math.min(box.bottom, r.top + e.clientHeight)}; } }
        const inside = points => points.every(([x, y]) => x >= box.left - 1 && x <= box.right + 1
                                                           && y >= box.top - 1 && y <= box.bottom + 1);
        for (const legend of div.querySelectorAll('g.legend')) {
            const bg = legend.querySelector('rect.bg');
            if (bg && !inside(corners(bg) || [])) defects.push(`${name}: legend outside the figure's visible box`);
            const bar = legend.querySelector('rect.scrollbar');
            if (bar && bar.getBBox().height > 0 && bar.getBBox().width > 0) defects.push(`${name}: the legend scrolls`);
            const entries = [...legend.querySelectorAll('.traces .legendtext')].map(t => t.textContent);
            const twice = entries.filter((t, i) => entries.indexOf(t) !== i);
            if (twice.length) defects.push(`${name}: legend entries listed twice: ${[...new Set(twice)].join(', ')}`); }
        const texts = [...div.querySelectorAll('.main-svg text')]
            .filter(t => t.textContent.trim() && !t.closest('.hoverlayer, .textpoint, .trace, .plot') && shown(t, div))
            .map(t => ({el: t, poly: corners(t)})).filter(t => t.poly);
        texts.forEach(t => { if (!inside(t.poly)) defects.push(`${name}: ${label(t.el)} cut by the figure's edge`); });
        for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++)
            if (overlap(texts[i].poly, texts[j].poly))
                defects.push(`${name}: ${label(texts[i].el)} overlaps ${label(texts[j].el)}`);
        // an axis's labels stay off every plot area (a long tick label under a neighbouring subplot)
        const origin = div.querySelector('.main-svg').getBoundingClientRect(), full = div._fullLayout;
        const areas = Object.values(div._fullLayout._plots || {}).map(p => {
            const l = origin.left + p.xaxis._offset, t = origin.top + p.yaxis._offset,
                  r = l + p.xaxis._length, b = t + p.yaxis._length;
            return [[l, t], [r, t], [r, b], [l, b]]; });
        texts.filter(t => /^[xy]\d*(tick2?|title)$/.test(t.el.parentElement.getAttribute('class') || '')
                          || /^[xy]\d*title$/.test(t.el.getAttribute('class') || ''))
            .forEach(t => { if (areas.some(a => overlap(t.poly, a)))
                defects.push(`${name}: ${label(t.el)} over a plot area`); });
        const cellText = [...div.querySelectorAll('.heatmaplayer text')].filter(t => t.textContent.trim())
            .map(t => parseFloat(getComputedStyle(t).fontSize));
        if (cellText.length && Math.min(...cellText) < LEAST_CELL_TEXT)
            defects.push(`${name}: heatmap cell text at ${Math.min(...cellText)} px`);
        // a zero line at an axis's very end doubles the other axis's line (or floats over its floor)
        Object.keys(full).filter(k => /^[xy]axis\\d*$/.test(k)).forEach(key => {
            const axis = full[key], [low, high] = [Math.min(...axis.range), Math.max(...axis.range)];
            if (axis.visible !== false && axis.zeroline && axis.type === 'linear' && low <= 0 && high >= 0
                && Math.min(-low, high) < 0.03 * (high - low))
                defects.push(`${name}: the ${key.replace('axis', '')} axis's zero line lies at its end`); });
        div._fullData.filter(t => ['heatmap', 'histogram2d'].includes(t.type) && t.visible === true).forEach(t => {
            for (const id of [t.xaxis, t.yaxis]) {
                const axis = full[id.replace(/^([xy])/, '$1axis')];
                if (axis && axis.zeroline && axis.type === 'linear' && Math.min(...axis.range) < 0 && Math.max(...axis.range) > 0)
                    defects.push(`${name}: the ${id} axis's zero line runs through a heatmap`); } });
    });
    return defects; }""".replace("LEAST_CELL_TEXT", str(LEAST_CELL_TEXT))

#: Each figure, in the theme's dark mode, whose background (the paper or a plot's) is light or
#: whose axis, title and legend text does not stand out from the page's background (contrast
#: ratio under 3).
DARK_DEFECTS = """() => {
    const rgba = text => { const c = document.createElement('canvas').getContext('2d');
        c.fillStyle = '#000'; c.fillStyle = text; c.fillRect(0, 0, 1, 1);
        return [...c.getImageData(0, 0, 1, 1).data].map((v, i) => i < 3 ? v / 255 : v / 255); };
    const luminance = ([r, g, b]) => [r, g, b].map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
        .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
    const transparent = text => /rgba\\(.*,\\s*0\\)$/.test(text.replace(/\\s/g, '')) || text === 'transparent';
    const page = rgba(getComputedStyle(document.body).backgroundColor), pageLum = luminance(page);
    const defects = [];
    [...document.querySelectorAll('.plotly-graph-div')].forEach((div, index) => {
        const name = `figure ${index + 1}`;
        const paper = div.querySelector('.main-svg').style.background || getComputedStyle(div.querySelector('.main-svg')).backgroundColor;
        const backgrounds = [paper, ...[...div.querySelectorAll('.bglayer rect.bg')].map(r => r.style.fill || r.getAttribute('fill'))];
        for (const bg of backgrounds)
            if (bg && !transparent(bg) && luminance(rgba(bg)) > 0.5 && rgba(bg)[3] > 0.3)
                defects.push(`${name}: a white background in dark mode (${bg})`);
        for (const t of div.querySelectorAll('.xtick text, .ytick text, text.gtitle, text.legendtext, text[class$="title"]')) {
            const fill = getComputedStyle(t).fill, l = luminance(rgba(fill));
            const contrast = (Math.max(l, pageLum) + 0.05) / (Math.min(l, pageLum) + 0.05);
            if (t.textContent.trim() && contrast < 3) { defects.push(`${name}: text "${t.textContent.slice(0, 30)}" unreadable in dark mode (${fill})`); break; } }
    });
    return defects; }"""

DARK_MODE = """() => { document.documentElement.dataset.theme = 'dark'; localStorage.setItem('theme', 'dark'); }"""

#: Colour arithmetic for the checks below: a CSS colour as [r, g, b, a] (0 to 1), WCAG's relative
#: luminance and contrast ratio, CIELAB and the distance of two colours in it (CIE76 delta E).
COLOUR_HELPERS = """
    const canvas = document.createElement('canvas').getContext('2d');
    const rgba = text => { canvas.clearRect(0, 0, 1, 1); canvas.fillStyle = '#000'; canvas.fillStyle = text;
        canvas.fillRect(0, 0, 1, 1); return [...canvas.getImageData(0, 0, 1, 1).data].map(v => v / 255); };
    const linear = v => v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    const luminance = ([r, g, b]) => 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
    const contrast = (a, b) => { const [lo, hi] = [luminance(a), luminance(b)].sort((x, y) => x - y);
        return (hi + 0.05) / (lo + 0.05); };
    const lab = ([r, g, b]) => {
        const [R, G, B] = [r, g, b].map(linear);
        const f = t => t > 216 / 24389 ? Math.cbrt(t) : (24389 / 27 * t + 16) / 116;
        const x = f((0.4124 * R + 0.3576 * G + 0.1805 * B) / 0.95047), y = f(0.2126 * R + 0.7152 * G + 0.0722 * B),
              z = f((0.0193 * R + 0.1192 * G + 0.9505 * B) / 1.08883);
        return [116 * y - 16, 500 * (x - y), 200 * (y - z)]; };
    const deltaE = (a, b) => Math.hypot(...lab(a).map((v, i) => v - lab(b)[i]));
    const page = rgba(getComputedStyle(document.body).backgroundColor);
"""

#: The defects of the colours a reader sees in the page's current mode (one string each,
#: "<figure>: <defect>"): a series (a legend entry: its line, or its markers or bars) whose
#: colour (a bar's at its opacity over the page) has a contrast under 3:1 with the page (WCAG's
#: least for graphics: translucent bars read dim on the dark page); two series drawn alike (same kind
#: of mark and dash) in colours the figure sets apart (not one colour for both, as for seeds of
#: one outcome) that lie closer than `SERIES_APART` in CIELAB, however many series the figure
#: has (an ordered gradient of eleven merged at 7), or that lie closer than that here though
#: they were apart in the mode checked before (`apart`, the pairs this check returned then); an
#: error bar, a shape's line or an annotation's own text colour under 3:1 on the page; and in
#: dark mode a heatmap whose colour scale ends in white (white blocks on the dark page) or in
#: black (holes in it). Returns {defects, apart}.
SERIES_APART = 12
COLOUR_DEFECTS = """(before) => {""" + COLOUR_HELPERS + """
    const dark = document.documentElement.dataset.theme === 'dark', defects = [], apart = [];
    [...document.querySelectorAll('.plotly-graph-div')].forEach((div, index) => {
        const title = div.layout.title && (div.layout.title.text || div.layout.title);
        const name = `figure ${index + 1}` + (typeof title === 'string' && title
            ? ` ("${title.replace(/<[^>]*>/g, ' ').slice(0, 50)}")` : '');
        const series = [];
        div._fullData.forEach(t => {
            if (t.visible !== true) return;
            const lines = /^scatter/.test(t.type) && (t.mode || '').includes('lines');
            const colour = lines ? (t.line || {}).color
                : ['bar', 'histogram', 'box', 'violin', 'waterfall'].includes(t.type) || /^scatter/.test(t.type)
                ? (t.marker || {}).color : null;
            for (const bar of [t.error_x, t.error_y])
                if (bar && bar.visible && typeof bar.color === 'string' && contrast(rgba(bar.color), page) < 3)
                    defects.push(`${name}: error bars of "${t.name}" at ${contrast(rgba(bar.color), page).toFixed(1)}:1 on the page (${bar.color})`);
            if (typeof colour !== 'string' || t.showlegend === false || !t.name) return;
            const look = lines ? `line ${(t.line || {}).dash || 'solid'}` : `${t.type} ${(t.marker || {}).symbol || ''}`;
            // a bar's colour as the reader sees it: at its opacity (the trace's and the bar's own)
            // over the page (translucent points and faint context lines keep their colour: their
            // translucency shows where they pile up, or sets them behind a mean)
            const area = ['bar', 'histogram', 'box', 'violin', 'waterfall'].includes(t.type);
            const own = area && typeof (t.marker || {}).opacity === 'number' ? t.marker.opacity : 1;
            const [r, g, b, a] = rgba(colour), alpha = area ? a * (t.opacity ?? 1) * own : 1;
            const seen = [r, g, b].map((v, k) => alpha * v + (1 - alpha) * page[k]);
            series.push({name: t.name, colour, look, rgb: rgba(colour), seen, alpha});
        });
        series.forEach(s => { const ratio = contrast(s.seen, page);
            if (ratio < 3) defects.push(`${name}: series "${s.name}" at ${ratio.toFixed(1)}:1 on the page (${s.colour}`
                                        + (s.alpha < 1 ? ` at opacity ${s.alpha.toFixed(2)})` : ')')); });
        for (let i = 0; i < series.length; i++) for (let j = i + 1; j < series.length; j++) {
            const [a, b] = [series[i], series[j]], distance = deltaE(a.rgb, b.rgb), pair = `${index}|${a.name}|${b.name}`;
            if (a.look !== b.look || a.name === b.name) continue;
            if (distance >= SERIES_APART) apart.push(pair);
            else if (distance >= 1 || before.includes(pair))
                defects.push(`${name}: series "${a.name}" and "${b.name}" drawn alike (${a.colour}, ${b.colour}: delta E ${distance.toFixed(0)})`); }
        (div._fullLayout.shapes || []).forEach((shape, k) => {
            const line = shape.line || {};
            if (shape.visible !== false && line.width > 0 && typeof line.color === 'string' && rgba(line.color)[3] > 0.5
                && contrast(rgba(line.color), page) < 3)
                defects.push(`${name}: shape ${k + 1}'s line at ${contrast(rgba(line.color), page).toFixed(1)}:1 on the page (${line.color})`); });
        (div.layout.annotations || []).forEach(note => {
            const colour = (note.font || {}).color;
            if (typeof colour === 'string' && contrast(rgba(colour), page) < 3)
                defects.push(`${name}: annotation "${String(note.text).slice(0, 30)}" at ${contrast(rgba(colour), page).toFixed(1)}:1 on the page (${colour})`); });
        if (dark) div._fullData.forEach(t => {
            const scale = t.colorscale || (t.marker || {}).colorscale
                || (t.coloraxis && (div._fullLayout[t.coloraxis] || {}).colorscale);
            if (!Array.isArray(scale) || !['heatmap', 'contour', 'histogram2d'].includes(t.type)) return;
            const white = c => { const [L, a, b] = lab(rgba(c)); return L > 90 && Math.hypot(a, b) < 12; };
            const black = c => lab(rgba(c))[0] < 10;
            if (white(scale[0][1]) || white(scale[scale.length - 1][1]))
                defects.push(`${name}: a heatmap whose colour scale ends in white on the dark page`);
            if (black(scale[0][1]) || black(scale[scale.length - 1][1]))
                defects.push(`${name}: a heatmap whose colour scale ends in black on the dark page`); });
    });
    return {defects: [...new Set(defects)], apart}; }""".replace("SERIES_APART", str(SERIES_APART))

#: Each table or code block of the page wider than the column it stands in whose extra width
#: cannot be reached or is not shown: no box that scrolls sideways around it within the column,
#: or a box that scrolls with no visible cue (tables.js's fade on the side with more of it).
TABLE_DEFECTS = """() => {
    const article = document.querySelector('article.bd-article'), column = article.getBoundingClientRect();
    const defects = [];
    for (const table of article.querySelectorAll('table, div.highlight > pre')) {
        if (!table.getClientRects().length) continue;
        let box = null;
        for (let e = table; e && e !== article; e = e.parentElement)
            if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX)) { box = e; break; }
        const text = table.textContent.trim().replace(/\\s+/g, ' ').slice(0, 40);
        if (!box) {
            if (table.getBoundingClientRect().right > column.right + 1) defects.push(`${table.tagName === 'PRE' ? 'code' : 'table'} "${text}" runs past the column`);
            continue; }
        if (box.scrollWidth <= box.clientWidth + 1) continue;
        const style = getComputedStyle(box), mask = style.maskImage || style.webkitMaskImage || 'none';
        if (!(box.classList.contains('book-more-right') || box.classList.contains('book-more-left')) || mask === 'none')
            defects.push(`${table.tagName === 'PRE' ? 'code' : 'table'} "${text}" is cut at the column's edge (${box.scrollWidth} px in ${box.clientWidth}) with no visible cue that it scrolls`);
    }
    return defects; }"""

#: Each cell of a table shown with a label of its own (CSS ::before text, as the index's tables
#: have on a phone) and nothing after the label.
EMPTY_LABELS = """() => [...document.querySelectorAll('article td, article th')].filter(cell => {
    const label = getComputedStyle(cell, '::before').content;
    return cell.getClientRects().length && label && !['none', 'normal', '""'].includes(label) && !cell.textContent.trim();
}).map(cell => `an empty cell labelled ${getComputedStyle(cell, '::before').content}`)"""


#: Each category axis of a figure (categories along x or y: a bar chart's, a strip's) that draws
#: fewer tick labels than it has categories in view (plotly, or the page's layout script, thinned
#: them where they collided), and each slider over names (not numbers: steps, layers and scales
#: may be labelled every n-th, as a numeric axis is) that labels fewer of its steps than it has
#: (plotly labels every n-th step when the names do not fit its rail).
CATEGORY_DEFECTS = """() => {
    const defects = [];
    [...document.querySelectorAll('.plotly-graph-div')].forEach((div, index) => {
        const title = div.layout.title && (div.layout.title.text || div.layout.title);
        const name = `figure ${index + 1}` + (typeof title === 'string' && title
            ? ` ("${title.replace(/<[^>]*>/g, ' ').slice(0, 50)}")` : '');
        const full = div._fullLayout;
        Object.keys(full).filter(k => /^[xy]axis\\d*$/.test(k)).forEach(key => {
            const axis = full[key];
            if (!axis || !['category', 'multicategory'].includes(axis.type) || axis.visible === false
                || axis.showticklabels === false || !Array.isArray(axis.range)) return;
            const categories = axis._categories || [];
            const [lo, hi] = [Math.min(...axis.range), Math.max(...axis.range)];
            let wanted = categories.map((c, i) => i);
            if (axis.tickmode === 'array' && Array.isArray(axis.tickvals))
                wanted = axis.tickvals.map(v => typeof v === 'number' ? v : categories.findIndex(c => String(c) === String(v)));
            wanted = wanted.filter(i => i >= 0 && i >= lo - 1e-6 && i <= hi + 1e-6);
            const drawn = [...div.querySelectorAll(`g.${axis._id}tick text`)].filter(t => t.textContent.trim()).length;
            if (drawn < wanted.length)
                defects.push(`${name}: its ${axis._id} axis names ${drawn} of its ${wanted.length} categories`);
        });
        const groups = div.querySelectorAll('.slider-container .slider-group');
        (full.sliders || []).forEach((slider, k) => {
            const labels = (slider.steps || []).filter(s => s.visible !== false && s.label).map(s => String(s.label).trim());
            const numbers = labels.filter(l => /^[-+]?[\\d.]+(e[-+]?\\d+)?(\\^[-+]?[\\d.]+)?$/i.test(l)).length;
            if (numbers * 2 >= labels.length) return;
            const drawn = [...(groups[k] || div).querySelectorAll('.slider-label')].filter(t => t.textContent.trim()).length;
            if (drawn < labels.length) defects.push(`${name}: slider ${k + 1} names ${drawn} of its ${labels.length} steps`);
        });
    });
    return defects; }"""

#: Each text of a figure (an axis's title or tick label, a subplot's title, a note, a legend entry)
#: that a control or a colour bar is drawn over: the box of a slider's rail, grip or labels, of a
#: button or of a colour bar overlapping the text's box (FIGURE_DEFECTS compares texts with texts
#: only: a slider's rail over an axis title is no text).
COVERED_LABELS = """() => {
    const TOLERANCE = 1.5;
    const box = el => { const r = el.getBoundingClientRect(); return r.width >= 1 && r.height >= 1 ? r : null; };
    const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > TOLERANCE
                           && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > TOLERANCE;
    const defects = [];
    [...document.querySelectorAll('.plotly-graph-div')].forEach((div, index) => {
        const title = div.layout.title && (div.layout.title.text || div.layout.title);
        const name = `figure ${index + 1}` + (typeof title === 'string' && title
            ? ` ("${title.replace(/<[^>]*>/g, ' ').slice(0, 50)}")` : '');
        const kind = el => el.closest('.colorbar') ? 'colour bar' : el.closest('.slider-container') ? 'slider' : 'button';
        const controls = [...div.querySelectorAll(
            '.slider-container .slider-rail-rect, .slider-container .slider-grip-rect, .slider-container .slider-label, '
            + '.slider-container .slider-currentvalue, .updatemenu-container .updatemenu-button, .colorbar')]
            .map(el => ({el, box: box(el)})).filter(c => c.box);
        const texts = [...div.querySelectorAll('.main-svg text')]
            .filter(t => t.textContent.trim() && !t.closest('.hoverlayer, .textpoint, .trace, .plot, .slider-container, '
                                                             + '.updatemenu-container, .colorbar'))
            .map(t => ({t, box: box(t)})).filter(t => t.box);
        for (const {t, box} of texts) {
            const over = controls.find(c => overlap(box, c.box));
            if (over) defects.push(`${name}: "${t.textContent.slice(0, 40)}" lies under a ${kind(over.el)}`); }
    });
    return [...new Set(defects)]; }"""

#: Pages whose figures still hide category names, left to the work on that chapter: their
#: CATEGORY_DEFECTS and COVERED_LABELS make the test xfail, naming them, rather than fail; delete
#: a page here once its figures pass (none left: chapter 8's figures 2 and 6, which named 2 of 4
#: and 3 of 7 at a phone's width, now give every category a tick of its own).
RESHAPE_PENDING: set[str] = set()


OVERFLOWING = """() => {
    const right = document.querySelector('article.bd-article').getBoundingClientRect().right + 1;
    const blocks = [...document.querySelectorAll(
        'article .cell_output > *, article p, article .plotly-figure, article h1, article h2, article table, article pre')];
    // Inside a block that scrolls sideways (a wide table, a code block) a cell may reach past
    // the column: the reader scrolls that block, not the page.
    const scrolled = b => {
        for (let e = b.parentElement; e && e.tagName !== 'ARTICLE'; e = e.parentElement)
            if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX)) return true;
        return false; };
    const out = blocks.filter(b => b.getBoundingClientRect().right > right && !scrolled(b))
                      .map(b => b.className || b.tagName);
    if (document.documentElement.scrollWidth > window.innerWidth + 1) out.push('the page scrolls sideways');
    // A long output line wraps; a long code line scrolls inside its block, with a scrollbar.
    for (const pre of document.querySelectorAll('article .cell_output pre')) {
        if (pre.scrollWidth > pre.clientWidth + 1) out.push('an output cut off: ' + pre.textContent.slice(0, 60));
    }
    for (const pre of document.querySelectorAll('article .cell_input pre')) {
        if (pre.scrollWidth > pre.clientWidth + 1 && !['auto', 'scroll'].includes(getComputedStyle(pre).overflowX))
            out.push('code cut off: ' + pre.textContent.slice(0, 60));
    }
    return out; }"""

SQUEEZED_PLOTS = """() => [...document.querySelectorAll('.plotly-graph-div')]
    // width: only a legend at the side takes it (one below leaves the width to the axes' labels)
    .filter(d => d._fullLayout.showlegend && ((d._fullLayout.legend.orientation !== 'h'
                                                && d._fullLayout._size.w < 0.5 * d.clientWidth)
        // a legend moved below the plot grows the figure by its height: the plot keeps its own
        || d._fullLayout._size.h < 0.3 * (d.dataset.wideLegend ? JSON.parse(d.dataset.wideLegend).height
                                                                 : d._fullLayout.height)))
    .map(d => (d.layout.title && (d.layout.title.text || d.layout.title)) || d.id)"""


@pytest.mark.browser
@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("name", ["index.html", "setup.html", *chapter_pages()])
def test_nothing_overflows_its_column_and_every_figure_keeps_its_legend_and_texts_apart(browser, book_url, name,
                                                                                        width):
    """After a normal load (no full-page screenshot, which resizes the page): nothing runs past the
    column; no figure's legend squeezes its plot, lies outside the figure's visible box or scrolls,
    lists an entry twice; no two texts of a figure overlap, none is cut by its edge or lies over a
    plot area (FIGURE_DEFECTS); every category of a figure is named by its tick, and every name of a
    slider over names by its label (CATEGORY_DEFECTS); no text lies under a slider, a button or a
    colour bar (COVERED_LABELS); no table is cut at the column's edge without a visible cue that it
    scrolls (TABLE_DEFECTS) and no cell shows a label with nothing after it (EMPTY_LABELS); and at
    the desk's width, in the light mode and then in the theme's dark mode (set as its toggle sets
    it), every series, error bar and mark stands out from the page and series drawn alike differ
    in colour (COLOUR_DEFECTS), and in dark mode no figure is a white box and its text is readable
    (DARK_DEFECTS). One page load for all: the checks add no load of their own."""
    page, problems = open_page(browser, book_url, name, width)
    assert page.evaluate(OVERFLOWING) == []
    assert page.evaluate(SQUEEZED_PLOTS) == []
    if width == "phone":   # the sidebar folds away: the text takes the screen's width
        assert page.locator("article.bd-article").bounding_box()["width"] > 0.85 * WIDTHS["phone"]
    defects = page.evaluate(FIGURE_DEFECTS) + page.evaluate(TABLE_DEFECTS) + page.evaluate(EMPTY_LABELS)
    hidden = page.evaluate(CATEGORY_DEFECTS) + page.evaluate(COVERED_LABELS)
    if width == "desktop":
        light = page.evaluate(COLOUR_DEFECTS, [])
        page.evaluate(DARK_MODE)
        page.wait_for_function("() => document.documentElement.dataset.figuresFitted === 'true'", timeout=60_000)
        dark = page.evaluate(COLOUR_DEFECTS, light["apart"])
        defects += light["defects"] + page.evaluate(DARK_DEFECTS) + [f"dark mode: {d}" for d in dark["defects"]]
    assert not defects, "\n".join(defects)
    assert not problems, problems
    page.close()
    if hidden and name in RESHAPE_PENDING:
        pytest.xfail("figures being reshaped (RESHAPE_PENDING):\n" + "\n".join(hidden))
    assert not hidden, "\n".join(hidden)


@contextlib.contextmanager
def fixture_site(folder: Path, pages: dict[str, list[dict]]):
    """Serve, from `folder`, one page per entry of `pages` (name -> staged figure JSON), each its
    figures one under another with plotly and the book's figure script, and yield the site's
    address: the reader checks run on figures without a book build."""
    import plotly

    from lib.book.sphinx_outputs import figure_html

    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", folder)
    shutil.copy(ROOT / "tools" / "sphinx" / "_static" / "plotly-figures.js", folder)
    for name, figures in pages.items():
        (folder / f"{name}.html").write_text(
            '<!doctype html><html data-theme="light"><head><meta charset="utf-8"><script src="plotly.min.js"></script>'
            '<script src="plotly-figures.js"></script></head><body style="margin: 0; padding: 0 16px; background: #ffffff">'
            + "".join(f"<section>{figure_html(figure)}</section>" for figure in figures) + "</body></html>")

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def open_fixture(browser, url: str, width: str):
    """A fixture page at `width`, its figures laid out by the figure script."""
    page = browser.new_page(viewport={"width": WIDTHS[width], "height": 900})
    page.goto(url, wait_until="load")
    page.wait_for_function("() => document.documentElement.dataset.figuresFitted === 'true'", timeout=60_000)
    return page


def reader_check_fixtures() -> dict[str, list[dict]]:
    """Figure JSON as the book stages it (`figure_style.restyle`): "old", four figures drawn as the
    chapters drew them before issue 51 (chapter 4's nine sweeps as vertical bars, chapter 3's five
    tests on a slider's rail, chapter 2's checkpoint slider with 40 px under its plot, chapter 1's
    48 matrices along x), and "new", the same data through today's chapter functions."""
    import plotly.graph_objects as go
    import torch

    from lib.book.confusion import confusion_figure
    from lib.book.figure_style import restyle
    from lib.book.plotting import finish, slider_over_steps
    from lib.bfs.study_damage import WEIGHT_LISTS
    from lib.chapters.ch1_figures import damage_distribution_figure
    from lib.chapters.ch2_figures import confusion_slider_figure
    from lib.chapters.ch3_figures import confusion_by_test_figure
    from lib.chapters.ch4_figures import outcome_fractions_figure
    from lib.paths.generalization_tests import TESTS, score

    experiments = ["s4", "s4_no_bias", "s4_second_decay", "s5", "z35_lr0.002", "z35_lr0.01", "z35_lr0.05",
                   "z35_book", "z100"]
    summaries = [{"name": f"{key[:3].upper()}_vs_X", "experiment": key, "weight_decay": 2e-5, "g1": "G1", "g2": "G2",
                  "n_instances": 100, "fraction_g1": 0.1 + 0.05 * i, "fraction_g2": 0.05,
                  "ci_grokked_g1": [0.05 + 0.05 * i, 0.2 + 0.05 * i], "ci_grokked_g2": [0.01, 0.1]}
                 for i, key in enumerate(experiments)]
    generator = torch.Generator().manual_seed(0)
    labels = torch.randint(1, 6, (60,), generator=generator)
    results = [score(test, labels.float() + 0.5 * torch.randn(60, generator=generator), labels, 8,
                     torch.zeros(60, dtype=torch.long), torch.ones(60), torch.full((60,), 2)) for test in TESTS.values()]
    predictions = [labels.float() + s * torch.randn(60, generator=generator) for s in (2.0, 1.0, 0.5)]

    draws = [{"weight_list": name, "index": i, "noise_draw": 0, "matrix": f"matrix {i + 1}", "mse": 10 ** (k / 10 - 3)}
             for k, (name, i) in enumerate((name, i) for name in WEIGHT_LISTS for i in range(8))]
    new = [outcome_fractions_figure(summaries), confusion_by_test_figure(results, 9),
           confusion_slider_figure([100, 200, 300], predictions, labels, 9, unreachable_label=8),
           damage_distribution_figure(draws, 0.403)]
    matrices = go.Figure([go.Scatter(x=[[d["weight_list"] for d in draws], [f"v{d['index'] + 1}" for d in draws]],
                                     y=[d["mse"] for d in draws], mode="markers")])
    matrices.update_xaxes(tickangle=-90, tickfont={"size": 9})
    matrices.update_yaxes(type="log")
    bars = go.Figure([go.Bar(x=[t for t in new[0].data[0].y], y=list(new[0].data[0].x), name="grokked G1")])
    tests = slider_over_steps([[confusion_figure(r.predictions, r.labels, 9).data[0]] for r in results],
                              [r.test.title for r in results], slider_prefix="test: ")
    frame = go.Figure(layout=confusion_figure(predictions[0], labels, 9, unreachable_label=8).layout)
    checkpoints = slider_over_steps([[confusion_figure(p, labels, 9, unreachable_label=8).data[0]] for p in predictions],
                                    ["100", "200", "300"], slider_prefix="step: ", active=2, figure=frame)
    old = [finish(bars, "Which group do the instances grok?", height=430),
           finish(tests, "Predicted against true distance on each test", height=600, width=640), checkpoints,
           finish(matrices, "every draw, by the matrix it hit", height=520)]
    return {era: [restyle(figure.to_plotly_json()) for figure in figures] for era, figures in
            (("old", old), ("new", new))}


@pytest.mark.browser
def test_the_reader_checks_find_hidden_names_and_covered_labels_on_old_figures_and_none_on_new(browser, tmp_path):
    """CATEGORY_DEFECTS and COVERED_LABELS on a page of three figures as the old chapters drew them
    and as today's draw them, at a phone's width with the book's figure script: each old figure
    has its defect (3 of 9 sweeps named, 3 of 5 tests, the slider's rail over the x axis's title,
    part of 48 matrices), no new one has any. Needs no book build."""
    found = {}
    with fixture_site(tmp_path, reader_check_fixtures()) as site:
        for era in ("old", "new"):
            page = open_fixture(browser, f"{site}/{era}.html", "phone")
            found[era] = page.evaluate(CATEGORY_DEFECTS) + page.evaluate(COVERED_LABELS)
            page.close()
    old = "\n".join(found["old"])
    assert "figure 1 (" in old and "x axis names" in old, old               # the sweeps' names thinned
    assert "figure 2 (" in old and "slider 1 names" in old, old             # the tests' names thinned
    assert "figure 3 (" in old and "lies under a slider" in old, old        # the rail over the title
    assert "figure 4 (" in old and "of its 48 categories" in old, old       # the matrices' names thinned
    assert found["new"] == [], "\n".join(found["new"])


def colour_check_fixtures() -> dict[str, list[dict]]:
    """Figure JSON as the book stages it: "old", six figures as the chapters drew or the book
    staged them before this change (chapter 2's eleven mean-prediction lines and chapter 3's nine
    distance lines along one Viridis gradient, chapter 6's translucent overlaid histograms,
    chapter 3's "%.2g" cell text, a confusion map with its zero line, chapter 7's Magma map with
    its black end in dark mode), and "new", the same data through today's chapter functions and
    style."""
    import types

    import torch

    from lib.book.confusion import confusion_figure
    from lib.book.figure_style import META_KEY, restyle
    from lib.book.plotting import finish, ordered_colours
    from lib.chapters.ch2_figures import mean_prediction_figure
    from lib.chapters.ch3_figures import length_heatmap_figure, loss_by_size_figure
    from lib.chapters.ch6_figures import total_variation_figure
    from lib.chapters.ch7_figures import ablation_figure
    from lib.paths.length_generalization import Cell, LengthSplit
    import plotly.graph_objects as go

    means = {k: [min(k, 4.0) + 0.01 * i * k for i in range(20)] for k in [*range(1, 11), 15]}
    split = LengthSplit(3, 6, 12)
    cells = [Cell(n, d, 10, 10.0 ** (d / 2 - 4), float(d), 1.0, split.size_seen(n), split.distance_seen(d))
             for n in range(3, 13) for d in range(1, min(n, 10))]
    generator = torch.Generator().manual_seed(0)
    outcome = torch.tensor([0] * 40 + [1] * 10 + [2] * 50)
    study = types.SimpleNamespace(group=outcome, authors_flips=torch.rand(100, generator=generator) * (outcome > 0),
                                  test_flips=torch.rand(100, generator=generator), test_tv=10 + torch.rand(100, generator=generator) * 40,
                                  epochs=torch.arange(2000, 3001, 100), authors_epochs=torch.arange(2500, 3001, 100))
    ablation = types.SimpleNamespace(components=("none", "layer 1 MLP", "layer 2 MLP"), labels=(1, 2, 8),
                                     loss=torch.tensor([[1e-4, 1e-3, 1e-2], [10.0, 5.0, 1.0], [1e-3, 20.0, 3.0]]))
    labels = torch.tensor([1, 1, 2, 2, 3, 3, 4, 4])
    confusion = confusion_figure(labels.float() + 0.4 * torch.randn(8, generator=generator), labels, 9)

    def lines(series: dict, name: str, title: str) -> go.Figure:
        fig = go.Figure([go.Scatter(y=values, name=f"{name} {key}", mode="lines", line={"color": colour})
                         for (key, values), colour in zip(series.items(), ordered_colours(len(series)))])
        return finish(fig, title)

    overlay = total_variation_figure(study).update_traces(opacity=0.6).update_layout(barmode="overlay")
    old = [restyle(figure.to_plotly_json()) for figure in (
        lines(means, "length", "Mean prediction by true path length"),
        lines({d: [c.mse for c in cells if c.distance == d] for d in range(1, 10)}, "distance", "Loss against size"),
        overlay, length_heatmap_figure(cells, split))]
    cell_text = old[3]["data"][0]       # the MSE to two digits, at the size plotly fits to a cell
    cell_text.update(text=cell_text["customdata"], texttemplate="%{text}")
    del cell_text["textfont"]["size"]
    zero_line, magma = restyle(confusion.to_plotly_json()), restyle(ablation_figure(ablation, 8).to_plotly_json())
    zero_line["layout"]["xaxis"]["zeroline"] = zero_line["layout"]["yaxis"]["zeroline"] = True
    black = magma["layout"]["meta"][META_KEY]["dark"]["data"]
    magma["layout"]["meta"][META_KEY]["dark"]["data"] = [
        [attribute, indices, [magma["data"][0]["colorscale"]] if attribute == "colorscale" else values]
        for attribute, indices, values in black]
    new = [mean_prediction_figure(list(range(20)), means, unreachable_label=15, title="Mean prediction"),
           loss_by_size_figure(cells, split), total_variation_figure(study), length_heatmap_figure(cells, split),
           confusion, ablation_figure(ablation, 8)]
    return {"old": old + [zero_line, magma], "new": [restyle(figure.to_plotly_json()) for figure in new]}


@pytest.mark.browser
def test_the_colour_and_cell_checks_find_merged_series_dim_bars_small_text_and_lines_through_heatmaps(browser,
                                                                                                       tmp_path):
    """COLOUR_DEFECTS (desk width, light then dark) and FIGURE_DEFECTS (phone width) on a page of
    six figures as the book drew them before and as today's chapters and style draw them: each old
    figure has its defect (neighbours of an eleven- and a nine-line gradient under 12 delta E, bars
    at 0.6 opacity under 3:1, cell text under 8 px, a zero line through a heatmap, a black scale end
    on the dark page), no new one has any. Needs no book build."""
    found = {}
    with fixture_site(tmp_path, colour_check_fixtures()) as site:
        for era in ("old", "new"):
            page = open_fixture(browser, f"{site}/{era}.html", "desktop")
            light = page.evaluate(COLOUR_DEFECTS, [])
            page.evaluate("() => { document.documentElement.dataset.theme = 'dark'; document.body.style.background = '#121212'; }")
            page.wait_for_timeout(500)
            dark = page.evaluate(COLOUR_DEFECTS, light["apart"])
            page.close()
            page = open_fixture(browser, f"{site}/{era}.html", "phone")
            found[era] = light["defects"] + [f"dark mode: {d}" for d in dark["defects"]] + [
                d for d in page.evaluate(FIGURE_DEFECTS) if "heatmap" in d]
            page.close()
    old = "\n".join(found["old"])
    assert 'figure 1 (' in old and '"length 1" and "length 2" drawn alike' in old, old      # eleven-line gradient
    assert 'figure 2 (' in old and '"distance 1" and "distance 2" drawn alike' in old, old  # nine-line gradient
    assert 'figure 3 (' in old and 'at opacity 0.60' in old, old                            # translucent bars
    assert 'figure 4 (' in old and 'heatmap cell text at' in old, old                       # shrunk cell text
    assert 'figure 5' in old and "zero line runs through a heatmap" in old, old              # the zero line
    assert 'dark mode: figure 6' in old and "ends in black" in old, old                      # Magma's black end
    assert found["new"] == [], "\n".join(found["new"])


#: Each cell of the "verdict" column of the index's tables of what is reproduced that is not
#: wholly visible without scrolling its table sideways (or the page).
HIDDEN_VERDICTS = """() => [...document.querySelectorAll('#what-is-reproduced table tbody tr')].map(row => {
    const names = [...row.closest('table').querySelectorAll('thead th')].map(th => th.textContent.trim());
    const cell = row.querySelectorAll('td')[names.indexOf('verdict')], box = cell.getBoundingClientRect();
    let edge = document.querySelector('article.bd-article').getBoundingClientRect().right + 1;
    for (let e = cell.parentElement; e && e.tagName !== 'ARTICLE'; e = e.parentElement)
        edge = Math.min(edge, e.getBoundingClientRect().left + e.clientWidth + 1);
    return box.right <= edge && box.left >= 0 && box.width > 0 ? null : cell.textContent; }).filter(t => t !== null)"""


@pytest.mark.browser
@pytest.mark.parametrize("width", list(WIDTHS))
def test_every_verdict_of_the_reproduced_tables_is_visible_without_scrolling_sideways(browser, book_url, width):
    page, problems = open_page(browser, book_url, "index.html", width)
    assert page.locator("#what-is-reproduced table tbody tr").count() >= 20, "the tables of what is reproduced"
    assert page.evaluate(HIDDEN_VERDICTS) == []
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert not problems, problems
    page.close()


@pytest.mark.browser
def test_sidebar_lists_the_pages_in_tocs_order_with_the_chapters_numbered(browser, book_url):
    page, _ = open_page(browser, book_url, "index.html")
    labels = [" ".join(text.split()) for text in page.locator("nav.bd-docs-nav a").all_inner_texts()]
    chapters = [label for label in labels if label[:1].isdigit()]
    assert [int(label.split(".")[0]) for label in chapters] == list(range(1, len(chapter_pages()) + 1))
    assert labels.index(chapters[0]) > 0 and labels[-1] == "References", labels
    page.close()


@pytest.mark.browser
def test_each_chapter_has_an_outline_whose_links_reach_their_headings(browser, book_url):
    for name in chapter_pages():
        page, _ = open_page(browser, book_url, name)
        outline = page.locator("nav.page-toc a")
        headings = page.locator("article h2")
        assert outline.count() >= headings.count() >= 2, name   # every h2 (and h3) is listed
        last = outline.nth(outline.count() - 1)
        target = last.get_attribute("href")
        last.click()
        page.wait_for_function(f"() => location.hash === '{target}'")
        top = page.evaluate(f"() => document.getElementById('{target[1:]}').getBoundingClientRect().top")
        assert page.evaluate("() => window.scrollY") > 0 and top < 900, (name, target, top)
        page.close()


@pytest.mark.browser
def test_search_finds_a_word_from_chapter_4(browser, book_url):
    """Sphinx's own search index of the book: "semidirect" appears only in chapter 4."""
    page, problems = open_page(browser, book_url, "search.html?q=semidirect")
    page.wait_for_selector("#search-results ul.search li a", timeout=30_000)
    links = page.locator("#search-results ul.search li > a").evaluate_all(
        "links => links.map(a => a.getAttribute('href'))")
    assert links and all("04_ambiguous_grokking" in link for link in links), links
    assert not problems, problems
    page.close()


@pytest.mark.browser
def test_chapter_2s_footnote_is_a_footnote(browser, book_url):
    page, _ = open_page(browser, book_url, "02_training.html")
    article = page.locator("article.bd-article")
    assert "[^bits]" not in article.inner_text()
    reference = page.locator("a.footnote-reference").first
    note = page.locator(reference.get_attribute("href"))
    assert "1.76" in note.inner_text()                 # the footnote's text, at the page's foot
    reference.click()
    page.wait_for_function(f"() => location.hash === '{reference.get_attribute('href')}'")
    page.close()


@pytest.mark.browser
def test_perturbation_slider_changes_the_plotted_data(browser, book_url):
    page, problems = open_page(browser, book_url, "01_handcrafted_bfs.html")
    figure_id = page.evaluate("""() => [...document.querySelectorAll('.plotly-graph-div')].find(
        d => (d.layout.sliders || []).some(s => (s.currentvalue.prefix || '').includes('perturbation scale'))).id""")
    visible_data = f"""() => document.getElementById('{figure_id}').data
        .filter(t => t.visible === true).map(t => Array.from(t.y))"""
    before = page.evaluate(visible_data)
    # Drag the slider's grip to the right end of its rail (the largest scale), as a reader would.
    page.locator(f"[id='{figure_id}'] .slider-rail-rect").scroll_into_view_if_needed()
    grip = page.locator(f"[id='{figure_id}'] .slider-grip-rect").bounding_box()
    rail = page.locator(f"[id='{figure_id}'] .slider-rail-rect").bounding_box()
    page.mouse.move(grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2)
    page.mouse.down()
    page.mouse.move(rail["x"] + rail["width"], grip["y"] + grip["height"] / 2, steps=10)
    page.mouse.up()
    page.wait_for_timeout(500)
    after = page.evaluate(visible_data)
    assert before and after and before != after
    assert not problems, problems
    page.close()


# --- The live sliders in JupyterLab ---------------------------------------------------------

#: The chapters with live panels: the menu choice (if any) and the key that moves the slider
#: to the other end of its range (chapter 1: the largest scale of Gaussian noise, which
#: visibly damages even the smoke-sized model; chapter 2: the first checkpoint; chapter 6: the
#: largest perturbation scale, 2^5, whose copies end far from the seed's own run).
LIVE_CHAPTERS = {"01_handcrafted_bfs": ("gaussian", "End"), "02_training": (None, "Home"),
                 "06_determination": (None, "End")}


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    """JupyterLab from this venv on 127.0.0.1, with a token, serving smoke copies of the chapters
    with live panels (papermill sets `smoke` and a private `results_dir`) and a fresh workspace
    and settings folder; its kernels and the server are shut down afterwards."""
    import papermill

    folder = tmp_path_factory.mktemp("lab")
    for name in LIVE_CHAPTERS:
        papermill.execute_notebook(str(ROOT / "notebooks" / f"{name}.ipynb"), str(folder / f"{name}.ipynb"),
                                   parameters={"smoke": True, "results_dir": str(folder / "results")},
                                   prepare_only=True, progress_bar=False)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = secrets.token_hex(16)
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={folder}", f"--LabApp.workspaces_dir={folder / 'workspaces'}",
               f"--LabApp.user_settings_dir={folder / 'settings'}"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    # No "Jupyter news?" prompt over the page (its check would also try the network).
    notifications = folder / "settings" / "@jupyterlab" / "apputils-extension"
    notifications.mkdir(parents=True)
    (notifications / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    # The server's log goes to a file: a pipe nobody reads would fill up and stall the server.
    log = folder / "jupyterlab.log"
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                assert server.poll() is None, f"JupyterLab did not start: {log.read_text()[-3000:]}"
                assert time.monotonic() < deadline, "JupyterLab did not answer within 60 s"
                time.sleep(0.5)
        yield url, token
    finally:
        try:
            for kernel in json.load(urllib.request.urlopen(f"{url}/api/kernels?token={token}", timeout=5)):
                request = urllib.request.Request(f"{url}/api/kernels/{kernel['id']}?token={token}",
                                                 method="DELETE")
                urllib.request.urlopen(request, timeout=10)
        finally:
            server.terminate()
            server.wait(timeout=30)


def wait_for_idle_kernel(url: str, token: str, notebook: str) -> None:
    """Wait until the kernel of `notebook`'s session has started and is idle (REST API)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        sessions = json.load(urllib.request.urlopen(f"{url}/api/sessions?token={token}", timeout=5))
        states = [s["kernel"]["execution_state"] for s in sessions if s["path"].endswith(notebook)]
        if states == ["idle"]:
            return
        time.sleep(0.5)
    raise AssertionError(f"no idle kernel for {notebook} within 120 s")


def live_figure_data(page):
    """The plotted values of the figure inside the live panel (None while there is none)."""
    return page.evaluate("""() => {
        const plot = document.querySelector('.widget-interact .js-plotly-plot');
        return plot && plot.data ? JSON.stringify(plot.data.map(t => [t.x, t.y, t.z])) : null; }""")


@pytest.mark.browser
@pytest.mark.parametrize("name", list(LIVE_CHAPTERS))
def test_live_slider_recomputes_the_figure_in_jupyterlab(browser, jupyterlab, name):
    """Open the chapter, run all its cells, press the panel's button, move its slider with the
    keyboard, press again: the figure's plotted data change and no cell errors."""
    url, token = jupyterlab
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{url}/lab/tree/{name}.ipynb?reset&token={token}", wait_until="load")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    wait_for_idle_kernel(url, token, f"{name}.ipynb")
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    # Every code cell has run when each prompt shows an execution count.
    page.wait_for_function("""() => {
        const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
        return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent)); }""",
                           timeout=240_000)
    tracebacks = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']",
                              has_text="Traceback")
    assert tracebacks.count() == 0, tracebacks.first.inner_text()

    choice, key = LIVE_CHAPTERS[name]
    panel = page.locator(".widget-interact").first
    panel.scroll_into_view_if_needed()
    if choice:
        panel.locator("select").select_option(choice)
    button = panel.locator("button", has_text=RUN_BUTTON)
    button.click()
    page.wait_for_function("() => !!document.querySelector('.widget-interact .js-plotly-plot')",
                           timeout=120_000)
    before = live_figure_data(page)
    readout = panel.locator(".widget-readout").first.inner_text()
    handle = panel.locator(".noUi-handle").first
    handle.focus()
    handle.press(key)
    assert panel.locator(".widget-readout").first.inner_text() != readout, "the slider did not move"
    button.click()
    page.wait_for_function("""(old) => {
        const plot = document.querySelector('.widget-interact .js-plotly-plot');
        return plot && plot.data && JSON.stringify(plot.data.map(t => [t.x, t.y, t.z])) !== old; }""",
                           arg=before, timeout=120_000)
    assert live_figure_data(page) != before
    assert panel.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
    page.close()
