"""The ``sktopics demo`` command: the quick start run on the BBC News corpus shipped
with the package, offline, with any of the five models."""

import sys
import time
import warnings

import numpy as np

__all__ = ["MODELS", "default_max_iter", "model_key", "run_demo"]

#: The demo's model names: the estimator each fits and what it is, in words.
MODELS = {
    "lda-gibbs": ("LDAGibbs", "LDA by collapsed Gibbs sampling (the quick start's model)"),
    "avitm": ("AVITM", "LDA by autoencoding variational Bayes"),
    "prodlda": ("ProdLDA", "product-of-experts topic model, autoencoding variational Bayes"),
    "pamvi": ("PAMVI", "Pachinko allocation: 2 super-topics over K sub-topics"),
    "molda": ("MoLDA", "word-level mixture of two LDAs of K/5 and 4K/5 topics"),
}

_ALIASES = {name.lower(): key for key, (name, _) in MODELS.items()}


def model_key(text):
    """The demo's name of a model given by that name or by its class name, in any
    case; anything else is returned unchanged, for the caller to reject."""
    text = text.strip().lower()
    return _ALIASES.get(text, text)


def default_max_iter(key):
    """The ``max_iter`` default of the model ``key``'s class, and what it counts."""
    import sktopics

    return getattr(sktopics, MODELS[key][0])().max_iter, _unit(key)


def _unit(key):
    return "sweeps" if key == "lda-gibbs" else "epochs"


def _call(key, n_components, max_iter, random_state, device):
    """The class of the model ``key`` and the arguments the demo gives it: its
    defaults but for ``n_components`` word-emitting topics and the options given."""
    import sktopics

    if key == "pamvi":
        params = {"structure": (2, n_components)}
    elif key == "molda":
        small = max(1, n_components // 5)
        params = {"component_sizes": (small, n_components - small)}
    else:
        params = {"n_components": n_components}
    if max_iter is not None:
        params["max_iter"] = max_iter
    if device != "auto":
        params["device"] = device
    params["random_state"] = random_state
    return getattr(sktopics, MODELS[key][0]), params


def run_demo(model="lda-gibbs", *, n_components=20, max_iter=None, random_state=0,
             device="auto", top_n=8, out=None):
    """Fit ``model`` as the quick start does and print its report to ``out``.

    A :class:`~sklearn.feature_extraction.text.CountVectorizer` pipeline is fitted on
    the training texts of :func:`~sktopics.datasets.load_bbc_news`; the report gives
    the top words of each topic, the wall time of the fit, the held-out
    log-likelihood per token (the pipeline's ``score`` on the test texts), the mean
    NPMI coherence in the test texts, in the default convention of
    :func:`~sktopics.metrics.npmi_coherence` (the report names the call that gives
    it), and the topic diversity.

    Returns
    -------
    report : dict
        ``pipeline`` (fitted), ``fit_seconds``, ``score``, ``npmi``, ``diversity``.
    """
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.pipeline import make_pipeline

    from sktopics import top_words
    from sktopics.datasets import load_bbc_news
    from sktopics.metrics import npmi_coherence, topic_diversity

    out = sys.stdout if out is None else out
    key = model_key(model)
    if key not in MODELS:
        raise ValueError(f"Unknown model {model!r}; expected one of {sorted(MODELS)}.")
    if key == "molda" and n_components < 2:
        raise ValueError(f"molda needs n_components >= 2 (two LDAs); got {n_components}.")
    train, test = load_bbc_news(subset="train"), load_bbc_news(subset="test")
    cls, params = _call(key, n_components, max_iter, random_state, device)
    pipe = make_pipeline(CountVectorizer(token_pattern=r"\S+"), cls(**params))

    def say(text=""):
        print(text, file=out, flush=True)

    call = ", ".join(f"{name}={value!r}" for name, value in params.items())
    say(f"sktopics demo: {cls.__name__}, {MODELS[key][1]}")
    say(f"{cls.__name__}({call}): {n_components} topics, {pipe[-1].max_iter} {_unit(key)}")
    say(f"BBC News, shipped with sktopics: {len(train.texts):,} training and {len(test.texts):,} "
        "held-out articles, through CountVectorizer(token_pattern=r'\\S+')")
    start = time.perf_counter()
    pipe.fit(train.texts)
    seconds = time.perf_counter() - start
    fitted = pipe[-1]
    say(f"fit time: {seconds:.1f} s (wall clock, on {fitted.device_})")
    say()
    say(f"top {top_n} words of each topic:")
    words = top_words(pipe, top_n)
    slices = getattr(fitted, "component_slices_", None)
    for k, topic in enumerate(words):
        group = "" if slices is None else next(
            f" (LDA {m + 1})" for m, s in enumerate(slices) if s.start <= k < s.stop)
        say(f"topic {k:2d}{group}: {' '.join(topic)}")
    score = pipe.score(test.texts)
    with warnings.catch_warnings(record=True) as notes:  # said in the report, not on stderr
        warnings.simplefilter("always", UserWarning)
        npmi = npmi_coherence(pipe, test.texts, top_n=10).mean
    diversity = topic_diversity(pipe, 25)
    say()
    say(f"held-out log-likelihood per token: {score:.4f} nats (perplexity {np.exp(-score):.1f}; "
        f"the model's score on the {len(test.texts)} held-out articles, higher is better)")
    say(f"held-out NPMI: {npmi:.3f} (mean over topics of their top 10 words' NPMI in the "
        "held-out articles; -1 to 1, higher is more coherent)")
    say("  the default convention of sktopics.metrics.npmi_coherence (gensim's c_npmi: a "
        "pair never together scores about -1);")
    say("  npmi_coherence(pipeline, load_bbc_news(subset='test').texts, top_n=10).mean "
        "reproduces it")
    for note in notes:
        say(f"  note: {note.message}")
    say(f"topic diversity: {diversity:.3f} (unique share of the topics' top 25 words)")
    return {"pipeline": pipe, "fit_seconds": seconds, "score": score, "npmi": npmi,
            "diversity": diversity}
