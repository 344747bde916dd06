"""Corpora for topic modelling: embedded, local and synthetic.

* :func:`load_bbc_news` -- BBC News (OCTIS preprocessing), shipped with the package.
* ``load_*`` local loaders -- corpora read from a folder you provide
  (``data_home`` or the ``SKTOPICS_DATA`` environment variable).
* :func:`make_lda_corpus`, :func:`make_pam_corpus` -- counts sampled from LDA or PAM
  with known parameters.
* :class:`ShardedCorpus` -- a corpus on disk as CSR shards, streamed through
  ``partial_fit``, ``transform`` and ``score`` one shard at a time.

Nothing in this subpackage downloads data.
"""

from ._embedded import load_bbc_news
from ._local import (
    get_data_home,
    load_20news_avitm,
    load_20ng_etm,
    load_googlenews,
    load_nips,
    load_nyt,
    load_octis,
)
from ._pam_synthetic import make_pam_corpus
from ._shards import ShardedCorpus
from ._synthetic import make_lda_corpus

__all__ = [
    "ShardedCorpus",
    "get_data_home",
    "load_20news_avitm",
    "load_20ng_etm",
    "load_bbc_news",
    "load_googlenews",
    "load_nips",
    "load_nyt",
    "load_octis",
    "make_lda_corpus",
    "make_pam_corpus",
]
