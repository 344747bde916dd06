"""Sphinx configuration of the sktopics documentation."""

import os
import sys
import warnings

sys.path.insert(0, os.path.abspath(".."))
import sktopics  # noqa: E402

project = "sktopics"
author = "sktopics developers"
copyright = "2026, sktopics developers"
release = sktopics.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/**/*.ipynb"]

_intersphinx = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable/", None),
    "scipy": ("https://docs.scipy.org/doc/scipy/", None),
    "sklearn": ("https://scikit-learn.org/stable/", None),
    "torch": ("https://pytorch.org/docs/stable/", None),
    "skorch": ("https://skorch.readthedocs.io/en/stable/", None),
}
# The docs build offline by default; SKTOPICS_DOCS_INTERSPHINX=1 links to the peers' docs.
intersphinx_mapping = _intersphinx if os.environ.get("SKTOPICS_DOCS_INTERSPHINX") else {}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
}

html_theme = "alabaster"
html_static_path = []
html_title = f"sktopics {release}"

warnings.filterwarnings("ignore", category=UserWarning, message="Matplotlib is currently using agg")
