"""The amortised posterior of a fitted PAM encoder, for the evaluators."""

import torch

from .._generative_pam import EdgeLayout
from ._estimator import EncoderProposal

__all__ = ["PAMEncoderProposal"]


class PAMEncoderProposal(EncoderProposal):
    """The amortised posterior over the flat PAM latent, as ``x -> (loc, scale)``."""

    def __init__(self, encoder, structure):
        super().__init__(encoder)
        self.layout = EdgeLayout(structure)

    def _flat(self, mus, logvars):
        loc, scale = [], []
        for level, (mu, logvar) in enumerate(zip(mus, logvars)):
            edges = self.layout.index(level, mu.device)
            loc.append(mu.flatten(1).index_select(1, edges))
            scale.append(torch.exp(0.5 * logvar).flatten(1).index_select(1, edges))
        return torch.cat(loc, 1), torch.cat(scale, 1)
