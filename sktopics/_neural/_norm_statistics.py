"""Exact batch-norm statistics over a whole data set (every rank's, data-parallel).

A topic VAE's batch norms see each training batch's own statistics. Two moments
need the statistics of a whole set of documents instead: the end of a fit, which
replaces the running averages by the training set's (:func:`measure_batch_norms`),
and the validation loss of a data-parallel fit, which normalises with the statistics
of every rank's validation documents, as one process normalises a validation set
that fits one inference batch (:func:`whole_set_statistics`).
"""

import contextlib

import torch

from ._modules import TFBatchNorm

__all__ = ["measure_batch_norms", "whole_set_statistics"]


def measure_batch_norms(module, batches, generator, collective=None):
    """Set every batch norm's running statistics to those of the documents ``batches()``
    yields (summed over the ranks of ``collective``), and freeze them.

    The encoder's norms are measured first (a pass through the encoder alone); the
    decoder's then see theta sampled from the now-frozen encoder, as in training.
    Every rank makes the same collectives whatever its number of batches.
    """
    for part in (module.encoder, module.decoder):
        norms = [m for m in part.modules() if isinstance(m, TFBatchNorm)]
        if not norms:  # PAMVI's and MoLDA's decoders normalise their parameters only
            continue
        for norm in norms:
            norm.start_accumulating()
        with torch.no_grad():
            for batch in batches():
                if part is module.encoder:
                    module.encoder(batch)
                else:
                    module(batch, generator=generator)
        for norm in norms:
            if collective is not None:
                _sum_accumulator(norm, collective)
            norm.stop_accumulating()


@contextlib.contextmanager
def whole_set_statistics(module, batches, generator, collective):
    """Inside the block the batch norms normalise with the statistics of the documents
    ``batches()`` yields on every rank; afterwards their running averages and modes
    are as they were.

    With ``generator=None`` the measuring passes draw from torch's global random
    streams, which are then put back: passes over the same batches inside the block
    draw the same noise, so the decoder's statistics are those of the theta the
    block's passes use, as in one process where one pass does both.
    """
    norms = [m for m in module.modules() if isinstance(m, TFBatchNorm)]
    saved = [(n.running_mean.clone(), n.running_var.clone(), n.use_running_stats)
             for n in norms]
    training = module.training
    module.eval()
    device = next(module.parameters()).device
    try:
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            measure_batch_norms(module, batches, generator, collective)
        yield
    finally:
        for norm, (mean, var, frozen) in zip(norms, saved):
            norm.running_mean.copy_(mean)
            norm.running_var.copy_(var)
            norm.use_running_stats = frozen
            norm._accumulator = None
        module.train(training)


def _sum_accumulator(norm, collective):
    """Sum a batch norm's accumulated statistics over the ranks (a rank without
    documents adds zeros)."""
    total, total_sq, count = norm._accumulator
    zeros = torch.zeros_like(norm.bias, dtype=torch.float64)
    total = collective.sum_(total if torch.is_tensor(total) else zeros.clone())
    total_sq = collective.sum_(total_sq if torch.is_tensor(total_sq) else zeros.clone())
    norm._accumulator = [total, total_sq, collective.sum(int(count))]
