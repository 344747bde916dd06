"""Shared docstring fragments: filled where they belong, or an error at import."""

import re

import pytest

from sktopics import PAMVI, MoLDA
from sktopics.utils._docstring import fill_doc, replace_entries

BLOCK = """
alpha : float
    First.
beta : int, default=2
    Second,
    on two lines.
gamma : str
    Third.
"""


def test_fill_doc_fills_placeholders_and_refuses_a_missing_one():
    @fill_doc(part="x : int\n    An x.")
    def f():
        """Doc.

        Parameters
        ----------
        {part}
        """

    assert "        x : int\n            An x." in f.__doc__
    with pytest.raises(ValueError, match=r"no \{other\} line"):
        fill_doc(other="y")(f)


def test_replace_entries_replaces_whole_entries_or_raises():
    out = replace_entries(BLOCK, beta="beta : float, default=0.5\n    New.",
                          gamma="gamma : bool\n    G.\ndelta : int\n    Inserted.")
    assert out == BLOCK.replace(
        "beta : int, default=2\n    Second,\n    on two lines.", "beta : float, default=0.5\n    New."
    ).replace("gamma : str\n    Third.", "gamma : bool\n    G.\ndelta : int\n    Inserted.")
    with pytest.raises(ValueError, match="'epsilon'"):
        replace_entries(BLOCK, epsilon="epsilon : int")


@pytest.mark.parametrize("cls", [PAMVI, MoLDA])
def test_pam_docstrings_describe_their_own_defaults(cls):
    doc = cls.__doc__
    assert "bn_eps : float, default=1e-6" in doc and "bn_eps : float, default=1e-3" not in doc
    assert "Widths of the hidden layers of each level's MLP" in doc
    assert "inference network's hidden layers" not in doc
    assert "batch_size : int, default=64" in doc
    for name in ("topic_word_prior", "word_gain", "shift_init", "n_jobs", "structure_",
                 "level_priors_", "level_weights_", "n_train_tokens_"):
        assert re.search(rf"^\s+{name} : ", doc, re.M), name
    assert "topic_word_prior_ : float or None" in doc and "topic_word_prior_ : None" not in doc
    assert not re.search(r"^\s*\{\w+\}\s*$", doc, re.M)  # no placeholder left
