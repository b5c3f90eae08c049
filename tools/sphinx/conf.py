"""Sphinx configuration of the HTML book, read from myst.yml (the one table of contents).

`tools/build_book.py` copies this file into the staged source folder (_build/sphinx/src) beside
a copy of myst.yml, the pages, the executed chapters and the static files, and runs Sphinx
there. Everything the book is made of comes from myst.yml: the title, the author, the
bibliography, and the order of the pages, which becomes the root page's hidden toctrees at
read time (pages, then the chapters numbered, then the references), so there is no second
table of contents to keep in step. Sphinx never executes a notebook (`nb_execution_mode`).
"""

from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
PROJECT = yaml.safe_load((HERE / "myst.yml").read_text())["project"]
#: Document names in toc order: a toc file's name without its folder or suffix (the staged
#: sources sit in one folder, as mystmd's site URLs do).
PAGES = [Path(entry["file"]).stem for entry in PROJECT["toc"]]
CHAPTERS = [page for page, entry in zip(PAGES, PROJECT["toc"]) if entry["file"].endswith(".ipynb")]

project = PROJECT["title"]
author = ", ".join(a["name"] for a in PROJECT.get("authors", []))
copyright = f"{author}, {PROJECT.get('license', '')}"
html_title = PROJECT["title"]
root_doc = PAGES[0]
include_patterns = [f"{page}.*" for page in PAGES] + ["references.md"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

extensions = ["myst_nb", "sphinxcontrib.bibtex", "sphinx.ext.mathjax"]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"
nb_ipywidgets_js = {}                   # panels show a note (lib.book.sphinx_outputs), no widget JS
nb_merge_streams = True
nb_render_markdown_format = "myst"     # markdown outputs may cite and refer, as cells do
numfig = True
math_numfig = True

bibtex_bibfiles = [Path(bib).name for bib in PROJECT.get("bibliography", [])]
bibtex_reference_style = "author_year"
bibtex_default_style = "plain"

# MathJax 3 and plotly.js are served from the book's own _static (tools/build_book.py puts
# them there from the npm and PyPI packages), so no page asks another site for anything.
mathjax_path = "mathjax/tex-chtml.js"
html_theme = "sphinx_book_theme"
html_static_path = ["_static"]
html_css_files = ["book.css"]
html_favicon = "_static/favicon.svg"  # (else browsers ask for /favicon.ico, which is not there)
html_js_files = [("plotly-figures.js", {"defer": "defer"})]
html_context = {"default_mode": "auto"}   # light or dark as the reader's system is
html_theme_options = {
    "home_page_in_toc": False,              # the book's title above the list already leads home
    "show_navbar_depth": 1,
    "use_download_button": True,
    "use_fullscreen_button": False,
}
html_show_sourcelink = False
html_last_updated_fmt = None


def toctree(pages: list[str], *options: str) -> str:
    return "\n```{toctree}\n:hidden:\n" + "".join(f"{o}\n" for o in options) + "\n" + "\n".join(pages) + "\n```\n"


def add_toc(app, docname: str, source: list[str]) -> None:
    """Give the root page (myst.yml's first entry) the book's toctrees, in myst.yml's order."""
    if docname != root_doc:
        return
    pages = [page for page in PAGES[1:] if page not in CHAPTERS]
    source[0] += (toctree(pages) + toctree(CHAPTERS, ":numbered: 1", ":caption: Chapters")
                  + toctree(["references"]))


def setup(app):
    app.connect("source-read", add_toc)
