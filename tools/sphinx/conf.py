"""Sphinx configuration of the HTML book, read from myst.yml (the one table of contents).

`tools/build_book.py` copies this file into the staged source folder (_build/sphinx/src) beside
a copy of myst.yml, the pages, the executed chapters and the static files, and runs Sphinx
there. Everything the book is made of comes from myst.yml: the title, the author, the
bibliography, and the order of the pages, which becomes the root page's hidden toctrees at
read time (pages, then the chapters numbered, then the references), so there is no second
table of contents to keep in step. Sphinx never executes a notebook (`nb_execution_mode`).
"""

import re
from pathlib import Path

import yaml
from docutils import nodes

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
html_js_files = [("plotly-figures.js", {"defer": "defer"}), ("tables.js", {"defer": "defer"})]
html_context = {"default_mode": "auto"}   # light or dark as the reader's system is
html_theme_options = {
    "home_page_in_toc": False,              # the book's title above the list already leads home
    "show_navbar_depth": 1,
    "use_download_button": True,
    "use_fullscreen_button": False,
}
#: The book's repository (myst.yml's `project.github`, MyST's own field): with one, the theme
#: shows its repository button and its launch buttons (Binder, Colab) on the chapters, which
#: sit in notebooks/ there. Without one (the case now: no page, CITATION.cff or pyproject.toml
#: names the book's repository) there is nothing for them to point at, and they stay off.
REPOSITORY = PROJECT.get("github")
if REPOSITORY:
    html_theme_options.update(repository_url=REPOSITORY, use_repository_button=True, path_to_docs="notebooks",
                              launch_buttons={"binderhub_url": "https://mybinder.org",
                                              "colab_url": "https://colab.research.google.com",
                                              "notebook_interface": "jupyterlab"})
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


#: A web address written out in a bibliography entry's note ("the authors' code: https://...").
BARE_URL = re.compile(r"https?://[^\s<>()]+[^\s<>().,;:]")


def link_bare_urls(app, doctree, docname: str) -> None:
    """Make each web address written out in a bibliography entry (a note's URL, which pybtex's
    style prints as text) a link, as the entry's own `url` field is."""
    for citation in list(doctree.findall(nodes.citation)):
        for text in list(citation.findall(nodes.Text)):
            if isinstance(text.parent, (nodes.reference, nodes.literal)) or not BARE_URL.search(text.astext()):
                continue
            parts, position, value = [], 0, text.astext()
            for match in BARE_URL.finditer(value):
                parts += [nodes.Text(value[position:match.start()]),
                          nodes.reference(match.group(), match.group(), refuri=match.group(), classes=["external"])]
                position = match.end()
            parts.append(nodes.Text(value[position:]))
            text.parent.replace(text, parts)


def setup(app):
    app.connect("source-read", add_toc)
    app.connect("doctree-resolved", link_bare_urls)
