"""Parameter and attribute descriptions shared by the PAMVI and MoLDA docstrings.

Built from the neural models' fragments with :func:`~sktopics.utils._docstring.replace_entries`
and filled in by :data:`fill_pam_doc`; both raise at import when a fragment no longer
fits the text it goes into.
"""

from ..utils._docstring import fill_doc, replace_entries
from ._docs import (
    COUNT_POLICY,
    ENCODER_AND_TRAINING,
    FITTED_ATTRIBUTES,
    INTERRUPTS,
    batch_parameters,
)

__all__ = [
    "PAM_FITTED_ATTRIBUTES",
    "PAM_TRAINING",
    "SHIFT_INIT",
    "TOPIC_WORD_PRIOR",
    "WORD_GAIN",
    "fill_pam_doc",
]

#: The neural models' fitted attributes, with the DAG's.
PAM_FITTED_ATTRIBUTES = replace_entries(
    FITTED_ATTRIBUTES,
    components_="""
components_ : ndarray of shape (`n_components_`, n_features)
    Leaf (sub-)topic word distributions, rows sum to 1.
n_components_ : int
    Number of leaf topics (``levels[-1]``), the width of :meth:`transform`.
structure_ : PAMStructure
    The validated DAG.
level_priors_ : list of ndarray
    Dirichlet parameters of every internal node, ``level_priors_[l]`` of shape
    ``(n_parents, n_children)`` (zeros on masked edges); ``level_priors_[0][0]``
    is the root's ``doc_topic_prior_``.
""",
    doc_topic_prior_="""
doc_topic_prior_ : ndarray of shape (levels[0],)
    The root's Dirichlet parameter.
level_weights_ : list of ndarray
    Corpus-level node -> child weights, same shapes as ``level_priors_``: the
    expected fraction of the training tokens passing through a node that go on
    to each child (see Notes).
""",
    topic_word_prior_="""
topic_word_prior_ : float or None
    ``topic_word_prior`` as used: the sub-topics are MAP point estimates under
    it, or maximum-likelihood ones for ``None`` (variational EM).
""",
)

_HIDDEN_SIZES = """
hidden_sizes : tuple of int, default=(100, 100)
    Widths of the hidden layers of each level's MLP (one MLP per internal level).
"""

_BN_EPS = """
bn_eps : float, default=1e-6
    Batch-norm epsilon. AVITM's TF default 1e-3 leaves the KL a way out of
    the batch norm on the mean heads: it shrinks a level's pre-norm spread
    below ``sqrt(bn_eps)``, and the level collapses onto its prior. With
    50 super- / 100 sub-topics on 20 Newsgroups (batch 64) the sub level did
    (NPMI 0.14, TD 0.07); with 1e-6 it stayed active through 60 epochs (NPMI
    0.19, TD 0.44, held-out likelihood slightly higher). Neutral on the
    smaller settings tried (user guide).
"""

#: The encoder and training parameters, with the PAM models' own defaults.
PAM_TRAINING = replace_entries(
    ENCODER_AND_TRAINING, hidden_sizes=_HIDDEN_SIZES, bn_eps=_BN_EPS,
) + batch_parameters(64, "shuffle").lstrip("\n")

SHIFT_INIT = """
shift_init : {"log_frequency", "zeros"}, default="log_frequency"
    Initial value of the decoder's learnable per-word shift ``b``: the centred
    log word frequencies of the training counts, or AVITM's zeros. With zeros,
    every topic starts with random high weight on rare words, and on a corpus
    with a large vocabulary (NIPS) the topics no document takes early keep
    them: 30 of 50 sub-topics stayed rarely used and test NPMI stalled near
    0.05; with log frequencies 2 of 50 did and NPMI reached 0.095 (user guide).
"""

TOPIC_WORD_PRIOR = """
topic_word_prior : float or None, default=None
    Symmetric Dirichlet prior ``eta`` of the sub-topics (tomotopy's ``eta``).
    The sub-topics are point estimates; with ``eta`` they are MAP estimates in
    the softmax basis, where the Dirichlet's density is ``prod_w phi_w ** eta``,
    so ``eta`` acts as pseudo-counts, ``phi_k = (n_k + eta) / (n_k. + V eta)``
    for expected counts ``n``, as in collapsed Gibbs. The log prior is spread
    over the training documents of each ``fit`` (with ``partial_fit``, over
    the documents of each call). ``None``: maximum likelihood, the paper's
    variational EM.
"""

WORD_GAIN = """
word_gain : bool, default=True
    Learn a per-word gain on the batch-normed topic logits,
    ``phi = softmax(g * BN(beta) + b)``. AVITM's decoder (``False``) gives every
    word unit spread across topics, which forces generic words into low-use
    "junk" topics; the gain lets them spread evenly. It raised test NPMI on BBC
    News and 20 Newsgroups and was neutral on NIPS (user guide).
"""

#: Class decorator filling the placeholders of the PAMVI and MoLDA docstrings.
fill_pam_doc = fill_doc(
    shared_parameters=PAM_TRAINING, fitted_attributes=PAM_FITTED_ATTRIBUTES,
    count_policy=COUNT_POLICY + INTERRUPTS, word_gain=WORD_GAIN, shift_init=SHIFT_INIT,
    topic_word_prior=TOPIC_WORD_PRIOR,
)
