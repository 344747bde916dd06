"""pytest plugin: shift every random stream of sktopics by a salt (environment: SALT).

A test that passes with the project's seeds but fails under some salt depends on the
exact random path of a run, which another CPU (other float kernels) or a GPU may not
take. Usage, from the repository root::

    for salt in 1 2 3 4 5 6 7 8; do
        SALT=$salt PYTHONPATH=research python -m pytest -q -p salted_random_streams
    done

The salt changes the algorithms' random numbers only (the evaluators' root keys, the
Gibbs streams and every estimator's seed), never the tests' data. See
``research/README.md`` for what it found.
"""
import os

SALT = int(os.environ.get("SALT", "0"))


def pytest_configure(config):
    if not SALT:
        return
    import sktopics._base as base
    import sktopics._evaluation._default_score as ds
    import sktopics._gibbs._lda_gibbs as lg
    import sktopics._gibbs._sweeps as sw
    import sktopics.model_selection._ais as ais
    import sktopics.model_selection._iteration_ais as it
    import sktopics.model_selection._left_to_right as l2r
    import sktopics.model_selection._ratio_ais as ra

    orig_root = ais.root_key

    def root_key(rs):
        return (orig_root(rs) ^ (0x9E3779B9 * SALT)) & 0xFFFFFFFF
    import sktopics._random as rnd

    for mod in (ais, it, l2r, ra, ds, rnd):
        mod.root_key = root_key
    orig_stream = sw.stream_key

    def stream_key(seed, stream, step):
        return orig_stream(seed + 1000003 * SALT, stream, step)
    sw.stream_key = stream_key
    lg.stream_key = stream_key
    orig_draw = base.draw_seed
    base.draw_seed = lambda rs: (orig_draw(rs) + 7919 * SALT) % (2**31 - 1)
