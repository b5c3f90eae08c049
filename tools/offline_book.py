"""Build the book as static HTML that works with no network (`python tools/build_book.py`).

The MyST theme has to be downloaded, which the development and CI machines cannot do. This
module renders the same table of contents (myst.yml) into `_build/html`: an index page, one
page per chapter with every output, previous/next navigation, math typeset by a local copy
of KaTeX and plotly figures drawn by the plotly.js that ships inside the plotly package.

It understands the MyST features the book uses: `$...$` / `$$...$$` math, tables, `[@key]`
citations resolved against book/references.bib, and fenced directives such as ```{note}.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import bibtexparser
import nbformat
import plotly
import yaml
from bibtexparser.middlewares import LatexDecodingMiddleware
from markdown_it import MarkdownIt
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

ROOT = Path(__file__).resolve().parents[1]
KATEX_VERSION = "0.19.1"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PROGRESS_BAR = re.compile(r"\d+%\|")
CITATION = re.compile(r"\[(@[\w:.-]+(?:\s*;\s*@[\w:.-]+)*)\]")
HEADING = re.compile(r'<h([23]) id="([^"]+)">(.*?)</h\1>', flags=re.S)


@dataclass
class Page:
    source: Path
    slug: str
    title: str = ""
    body: str = ""
    outline: str = ""


# ---------------------------------------------------------------- bibliography
def parse_bibtex(text: str) -> dict[str, dict[str, str]]:
    """The entries of a BibTeX file by key: type and fields (names lower-cased, values with their
    LaTeX decoded), read with bibtexparser. A block it cannot parse is an error naming it."""
    library = bibtexparser.parse_string(text, append_middleware=[LatexDecodingMiddleware()])
    if library.failed_blocks:
        first = library.failed_blocks[0]
        raise ValueError(f"{len(library.failed_blocks)} BibTeX block(s) could not be read, the first at line "
                         f"{first.start_line + 1}: {first.raw[:80]!r}")
    return {entry.key: {"type": entry.entry_type.lower(), **{f.key.lower(): f.value for f in entry.fields}}
            for entry in library.entries}


def short_citation(entry: dict[str, str]) -> str:
    """'Wang et al., 2024' style label of one entry."""
    authors = [a.strip() for a in entry.get("author", "Anonymous").split(" and ")]
    first = authors[0].split(",")[0].strip()
    who = first if len(authors) == 1 else f"{first} & {authors[1].split(',')[0].strip()}" if len(authors) == 2 \
        else f"{first} et al."
    return f"{who}, {entry.get('year', 'n.d.')}"


def full_citation(entry: dict[str, str]) -> str:
    """One formatted line of the reference list."""
    venue = entry.get("booktitle") or entry.get("journal") or entry.get("howpublished") or entry.get("school", "")
    arxiv = f" arXiv:{entry['eprint']}." if "eprint" in entry else ""
    return (f"{html.escape(entry.get('author', ''))} ({entry.get('year', 'n.d.')}). "
            f"<em>{html.escape(entry.get('title', ''))}</em>. {html.escape(venue)}.{arxiv}")


# ---------------------------------------------------------------- markdown
class MarkdownRenderer:
    """markdown-it with the MyST bits the book uses; records which citations appeared."""

    def __init__(self, bibliography: dict[str, dict[str, str]]):
        self.bibliography = bibliography
        self.cited: list[str] = []
        self.md = (MarkdownIt("commonmark", {"html": True}).enable("table")
                   .use(dollarmath_plugin, double_inline=True).use(front_matter_plugin)
                   .use(anchors_plugin, min_level=2, max_level=3))
        self.md.add_render_rule("math_inline", lambda s, tokens, idx, o, e:
                                f'<span class="math inline">{html.escape(tokens[idx].content)}</span>')
        self.md.add_render_rule("math_block", lambda s, tokens, idx, o, e:
                                f'<div class="math display">{html.escape(tokens[idx].content)}</div>\n')
        self.md.add_render_rule("math_block_label", lambda s, tokens, idx, o, e:
                                f'<div class="math display">{html.escape(tokens[idx].content)}</div>\n')
        default_fence = self.md.renderer.rules["fence"]

        def fence(renderer, tokens, idx, options, env):
            info = tokens[idx].info.strip()
            directive = re.fullmatch(r"\{(\w[\w-]*)\}\s*(.*)", info)
            if not directive:
                return default_fence(tokens, idx, options, env)
            kind, title = directive.groups()
            inner = self.render(tokens[idx].content)
            heading = f'<p class="admonition-title">{html.escape(title or kind.capitalize())}</p>'
            return f'<div class="admonition {kind}">{heading}{inner}</div>\n'

        self.md.add_render_rule("fence", fence)

    def _cite(self, match: re.Match) -> str:
        labels = []
        for key in (k.strip().lstrip("@") for k in match.group(1).split(";")):
            if key not in self.bibliography:
                raise KeyError(f"citation [@{key}] is not in book/references.bib")
            if key not in self.cited:
                self.cited.append(key)
            labels.append(f'<a class="citation" href="references.html#{key}">'
                          f'{html.escape(short_citation(self.bibliography[key]))}</a>')
        return "(" + "; ".join(labels) + ")"

    def render(self, text: str) -> str:
        return self.md.render(CITATION.sub(self._cite, text))


def add_outline(body: str) -> tuple[str, str]:
    """The page body with a unique id on every h2/h3 heading, and the page's outline: links to
    those headings, shown in the sidebar under the current page ("" when it has none)."""
    seen: dict[str, int] = {}
    links = []

    def unique(match: re.Match) -> str:
        level, anchor, text = match.groups()
        seen[anchor] = seen.get(anchor, 0) + 1
        # Each markdown cell is rendered alone, so two cells' headings can share an id.
        anchor = anchor if seen[anchor] == 1 else f"{anchor}-{seen[anchor]}"
        label = re.sub(r"</?a\b[^>]*>", "", text)  # a citation link cannot sit inside a link
        links.append(f'<a class="outline-h{level}" href="#{anchor}">{label}</a>')
        return f'<h{level} id="{anchor}">{text}</h{level}>'

    body = HEADING.sub(unique, body)
    outline = f'<div class="outline"><p>On this page</p>{"".join(links)}</div>' if links else ""
    return body, outline


def first_heading(text: str) -> str:
    match = re.search(r"^#\s+(.+)$", text, flags=re.M)
    return match.group(1).strip() if match else ""


# ---------------------------------------------------------------- notebooks
def render_output(output: dict, renderer: MarkdownRenderer, figure_ids: list[str]) -> str:
    """HTML of one notebook output, choosing the richest mimetype this page can show."""
    kind = output.get("output_type")
    if kind == "stream":
        css = "stream stderr" if output.get("name") == "stderr" else "stream"
        return f'<pre class="{css}">{html.escape(ANSI.sub("", output.get("text", "")))}</pre>'
    if kind == "error":
        trace = ANSI.sub("", "\n".join(output.get("traceback", [])))
        return f'<pre class="error">{html.escape(trace)}</pre>'
    data = output.get("data", {})
    if "application/vnd.plotly.v1+json" in data:
        figure = data["application/vnd.plotly.v1+json"]
        div_id = f"plotly-figure-{len(figure_ids)}"
        figure_ids.append(div_id)
        # "</" inside a script element would end it early; JSON allows the escaped form.
        payload = json.dumps({"data": figure.get("data", []), "layout": figure.get("layout", {})})
        payload = payload.replace("</", "<\\/")
        return (f'<div class="plotly-figure" id="{div_id}"></div>'
                f'<script type="application/json" id="{div_id}-json">{payload}</script>')
    if "application/vnd.jupyter.widget-view+json" in data:
        if PROGRESS_BAR.search("".join(data.get("text/plain", ""))):
            return ""  # a tqdm bar frozen at its first state says nothing in a static page
        return ('<p class="widget-note">An interactive ipywidgets control appears here when the chapter '
                'runs in a live Jupyter kernel.</p>')
    if "text/html" in data:
        return f'<div class="html-output">{"".join(data["text/html"])}</div>'
    if "text/markdown" in data:
        return f'<div class="markdown-output">{renderer.render("".join(data["text/markdown"]))}</div>'
    if "image/png" in data:
        return f'<img alt="figure" src="data:image/png;base64,{data["image/png"]}">'
    if "image/svg+xml" in data:
        return "".join(data["image/svg+xml"])
    if "text/plain" in data:
        return f'<pre class="text-output">{html.escape(ANSI.sub("", "".join(data["text/plain"])))}</pre>'
    return ""


def render_notebook(path: Path, renderer: MarkdownRenderer) -> tuple[str, str]:
    """(title, body HTML) of an executed notebook. Code cells tagged as MyST tags them are
    honoured: `remove-cell` drops the cell, `remove-input` its source, `remove-output` its
    outputs (kept in the notebook, left out of the book)."""
    notebook = nbformat.read(path, as_version=4)
    parts, figure_ids, title = [], [], ""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            title = title or first_heading(cell.source)
            parts.append(f'<section class="markdown-cell">{renderer.render(cell.source)}</section>')
        elif cell.cell_type == "code":
            tags = cell.get("metadata", {}).get("tags", [])
            if "remove-cell" in tags:
                continue
            label = "parameters" if "parameters" in tags else "injected parameters" \
                if "injected-parameters" in tags else "code"
            outputs = "" if "remove-output" in tags else \
                "".join(render_output(o, renderer, figure_ids) for o in cell.get("outputs", []))
            source = "" if "remove-input" in tags else (
                f'<details class="source"{" open" if label == "parameters" else ""}>'
                f'<summary>{label}</summary><pre><code class="language-python">'
                f'{html.escape(cell.source)}</code></pre></details>')
            parts.append(f'<section class="code-cell">{source}<div class="outputs">{outputs}</div></section>')
    return title or path.stem, "\n".join(parts)


# ---------------------------------------------------------------- pages
STYLE = """
body{margin:0;font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#222;line-height:1.55}
nav.toc{position:fixed;top:0;left:0;bottom:0;width:250px;overflow-y:auto;background:#f6f7f9;
 border-right:1px solid #ddd;padding:1.2rem 1rem;box-sizing:border-box;font-size:.92rem}
nav.toc a{display:block;color:#1a4f8b;text-decoration:none;padding:.25rem 0}
nav.toc a.current{font-weight:700;color:#000}
.outline{margin:.1rem 0 .5rem .5rem;padding-left:.6rem;border-left:2px solid #ddd;font-size:.85rem}
.outline p{margin:.2rem 0;color:#666}nav.toc .outline a{padding:.15rem 0}nav.toc .outline a.outline-h3{padding-left:.8rem}
main{margin-left:250px;padding:1.5rem 2.5rem;max-width:1000px}
pre{background:#f3f3f3;padding:.6rem .8rem;overflow-x:auto;font-size:.85rem;border-radius:4px}
pre.stderr{background:#fff6e6}pre.error{background:#fde8e8}
details.source summary{cursor:pointer;color:#666;font-size:.85rem}
table{border-collapse:collapse;margin:1rem 0;display:block;max-width:100%;overflow-x:auto}td,th{border:1px solid #ccc;padding:.3rem .6rem}
.admonition{border-left:4px solid #0072B2;background:#eef5fb;padding:.4rem 1rem;margin:1rem 0}
.admonition-title{font-weight:700;margin:.3rem 0}
.pager{display:flex;justify-content:space-between;margin:3rem 0 1rem;border-top:1px solid #ddd;padding-top:1rem}
.plotly-figure{width:100%;min-height:420px;margin:1rem 0}
.widget-note{color:#666;font-style:italic}
h1,h2,h3{overflow-wrap:anywhere}
.markdown-cell,.markdown-output,.html-output{overflow-x:auto}
#search{margin:.6rem 0;--pagefind-ui-scale:.75}
@media (max-width:820px){
 nav.toc{position:static;width:auto;border-right:none;border-bottom:1px solid #ddd;padding:.8rem 1rem}
 main{margin-left:0;padding:1rem}
}
"""

SCRIPT = """
if (window.PagefindUI) { new PagefindUI({element: '#search', showSubResults: true, showImages: false}); }
document.querySelectorAll('.math').forEach(function (el) {
  if (window.katex) { katex.render(el.textContent, el, {displayMode: el.classList.contains('display'), throwOnError: false}); }
});
document.querySelectorAll('.plotly-figure').forEach(function (div) {
  var fig = JSON.parse(document.getElementById(div.id + '-json').textContent);
  // A figure drawn at a fixed width wider than the column (a narrow screen) takes the column's.
  if (fig.layout.width && fig.layout.width > div.clientWidth) { delete fig.layout.width; }
  Plotly.newPlot(div, fig.data, fig.layout, {responsive: true, displaylogo: false});
});
"""


def nav_label(page: Page) -> str:
    """The page's entry in the sidebar: "Introduction" for the index (whose title is the book's,
    already at the top), "N. title" for chapter N (notebooks/NN_topic.ipynb), else its title."""
    if page.slug == "index":
        return "Introduction"
    number = re.match(r"(\d\d)_", page.source.name)
    return f"{int(number.group(1))}. {page.title}" if number and page.source.suffix == ".ipynb" else page.title


def page_html(book_title: str, pages: list[Page], index: int, has_katex: bool, has_search: bool) -> str:
    page = pages[index]
    links = "".join(f'<a href="{p.slug}.html"{" class=current" if i == index else ""}>{html.escape(nav_label(p))}</a>'
                    + (p.outline if i == index else "") for i, p in enumerate(pages))
    prev_link = f'<a href="{pages[index - 1].slug}.html">← {html.escape(pages[index - 1].title)}</a>' if index else "<span></span>"
    next_link = (f'<a href="{pages[index + 1].slug}.html">{html.escape(pages[index + 1].title)} →</a>'
                 if index + 1 < len(pages) else "<span></span>")
    katex = ('<link rel="stylesheet" href="_static/katex/katex.min.css">'
             '<script src="_static/katex/katex.min.js"></script>') if has_katex else ""
    search = ('<link rel="stylesheet" href="pagefind/pagefind-ui.css"><script src="pagefind/pagefind-ui.js"></script>'
              if has_search else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(page.title)} · {html.escape(book_title)}</title>
<link rel="icon" href="data:,">
<style>{STYLE}</style>{katex}{search}<script src="_static/plotly.min.js"></script></head>
<body><nav class="toc"><a href="index.html"><strong>{html.escape(book_title)}</strong></a>
<div id="search"></div><hr>{links}</nav>
<main data-pagefind-body>{page.body}<div class="pager" data-pagefind-ignore>{prev_link}{next_link}</div></main>
<script>{SCRIPT}</script></body></html>
"""


def install_katex(static: Path) -> bool:
    """Copy KaTeX (from the npm registry, cached in _build/npm) into static/katex; False if impossible."""
    npm_dir = ROOT / "_build" / "npm"
    dist = npm_dir / "node_modules" / "katex" / "dist"
    if not dist.exists():
        npm_dir.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(npm_dir),
                            f"katex@{KATEX_VERSION}"], check=True, capture_output=True, timeout=300)
        except (OSError, subprocess.SubprocessError):
            return False
    shutil.copytree(dist, static / "katex", dirs_exist_ok=True)
    return True


def executed_copy(source: Path, notebooks: Path | None) -> Path:
    """The notebook to render for toc entry `source`: its executed copy in `notebooks` (what
    `make execute` writes) when there is one, else the committed notebook itself."""
    if notebooks is not None and (notebooks / source.name).exists():
        return notebooks / source.name
    return source


def build(output: Path = ROOT / "_build" / "html", notebooks: Path | None = None,
          pages_text: dict[str, str] | None = None) -> Path:
    """Render every page of myst.yml's toc into `output`, chapters from their executed copies in
    `notebooks` where present and markdown pages from `pages_text` (toc file -> text) where
    given; return the index page's path."""
    config = yaml.safe_load((ROOT / "myst.yml").read_text())
    project = config["project"]
    bibliography = {}
    for bib in project.get("bibliography", []):
        bibliography.update(parse_bibtex((ROOT / bib).read_text()))
    renderer = MarkdownRenderer(bibliography)
    pages = []
    for position, entry in enumerate(project["toc"]):
        source = ROOT / entry["file"]
        slug = "index" if position == 0 else source.stem
        page = Page(source, slug)
        if source.suffix == ".ipynb":
            page.title, page.body = render_notebook(executed_copy(source, notebooks), renderer)
        else:
            text = (pages_text or {}).get(entry["file"]) or source.read_text()
            page.title, page.body = first_heading(text) or source.stem, renderer.render(text)
        pages.append(page)
    # Links between pages are written to the sources (setup.md, 02_training.ipynb): point them at the HTML.
    slugs = {page.source.stem: page.slug for page in pages}
    for page in pages:
        page.body = re.sub(r'href="(?:[^"#:]*/)?([^"#:/]+)\.(?:md|ipynb)(#[^"]*)?"',
                           lambda m: f'href="{slugs.get(m.group(1), m.group(1))}.html{m.group(2) or ""}"', page.body)
        page.body, page.outline = add_outline(page.body)
    references = "".join(f'<li id="{key}">{full_citation(bibliography[key])}</li>' for key in renderer.cited)
    pages.append(Page(ROOT / "book" / "references.bib", "references", "References",
                      f"<h1>References</h1><ol>{references}</ol>"))
    if output.exists():
        shutil.rmtree(output)
    static = output / "_static"
    static.mkdir(parents=True)
    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", static / "plotly.min.js")
    has_katex = install_katex(static)
    if not has_katex:
        print("KaTeX could not be installed from npm; math is shown as TeX source.")
    def write_pages(has_search: bool) -> None:
        for index in range(len(pages)):
            (output / f"{pages[index].slug}.html").write_text(
                page_html(project["title"], pages, index, has_katex, has_search))

    write_pages(has_search=True)
    if not index_for_search(output):
        print("Pagefind could not index the book; it is built without search.")
        write_pages(has_search=False)
    return output / "index.html"


def index_for_search(site: Path) -> bool:
    """Index the built pages with Pagefind (its index and search UI go to site/pagefind); False
    when the pagefind binary is missing or fails. The search needs the book served over HTTP
    (`python -m http.server`), as browsers do not let a page opened from a file fetch its index."""
    try:
        subprocess.run([sys.executable, "-m", "pagefind", "--site", str(site)], check=True,
                       capture_output=True, timeout=300)
    except (OSError, subprocess.SubprocessError):
        return False
    return (site / "pagefind" / "pagefind-ui.js").exists()
