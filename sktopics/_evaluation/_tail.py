"""The long documents' tail of a collapsed sweep, solved as a fixed point.

A lock-step sweep (:mod:`._zspace`) updates position ``j`` of every (document,
chain) row at once, so its cost per temperature is one small step per position of
the *longest* document, however few rows are still that long. Past the position
where fewer than a handful of rows remain, this module finishes the sweep of those
rows another way, with the same result.

A sequential sweep over positions ``p0 <= p < p1`` of a row draws

    z_p = F(counts of the other tokens, u_p)

by inverse CDF from the token's collapsed conditional, where the other tokens are
the ones before ``p`` with their *new* values and the ones after with their old
values. Given guesses of the new values, every draw of the block can be computed at
once (the counts each token sees are a prefix sum over the block); replacing the
guesses by the draws and repeating is a Jacobi iteration for the sequential
recurrence. Its fixed point is the sequential sweep itself, draw for draw (by
induction over positions: the first token's counts do not depend on the guesses,
and so on), and it is reached after at most ``p1 - p0`` iterations; on real
documents it takes a handful, because a changed draw moves the counts a later token
sees by one and rarely moves that token's draw. After each iteration the prefix up
to the first changed draw is final and is not computed again.

This is an exact evaluation of the same sweep, not an approximation of it (a
*parallel* update from stale counts, the first iteration alone, is not a valid
kernel): the result equals the plain sequential sweep with the same uniforms, up to
the float32 rounding of the conditional that the lock-step loop also has.
"""

import torch

__all__ = ["TAIL_ROWS", "TailLayout", "fixed_point_sweep", "tail_start"]

#: A position goes to the fixed-point solver when fewer than ``TAIL_ROWS / K`` rows
#: (and at least 2) hold a token there. The lock-step loop costs about 11
#: microseconds per position plus 1.4-2 ns per row and topic (one CPU thread); the
#: solver about 20 ns per token and topic, all its iterations included, so it wins
#: below roughly 600 / K to 1,000 / K rows. On 600-document folds of 20 Newsgroups
#: (K = 50) limits of 8, 16 and 32 rows were within the noise of one another.
TAIL_ROWS = 800

#: Elements (rows x positions x topics) of one block of the fixed-point solver.
_BLOCK_ELEMENTS = 1 << 16


def tail_start(n_active, n_topics, tail_rows=None, device="cpu"):
    """The first position handled by the fixed-point solver (``len(n_active)``: none).

    Off the CPU there is no tail: each Jacobi iteration asks the host whether any
    draw changed (a device synchronisation per iteration), which costs more on an
    accelerator than the lock-step loop's extra positions, and the loop itself runs
    without synchronising.
    """
    if torch.device(device).type != "cpu":
        return len(n_active)
    limit = max(2, (TAIL_ROWS if tail_rows is None else tail_rows) // max(n_topics, 1))
    for j, n in enumerate(n_active):
        if n < limit:
            return j
    return len(n_active)


class _Block:
    """Positions ``first:stop`` (relative to the tail's start) of rows ``r0:r1``.

    ``at`` (rows, positions) is each token's place in the batch's per-token arrays
    (0 past a row's end, where ``valid`` is False); ``ones`` is ``valid`` as float32
    (rows, positions, 1); ``flat`` the places of the valid tokens, in row-major order.
    """

    def __init__(self, index, first, stop, r0, r1):
        # ``index``: the places of rows r0:r1 at positions first:stop (-1: none)
        self.first, self.stop, self.r0, self.r1 = first, stop, r0, r1
        self.valid = index >= 0
        self.at = index.clamp_min(0)
        self.flat = index[self.valid]

    @property
    def ones(self):
        """``valid`` as float32 (rows, positions, 1), made per sweep, not kept."""
        return self.valid.to(torch.float32).unsqueeze(-1)

    def tok(self, tok):
        """``tok[at]``, gathered per sweep rather than kept."""
        return tok[self.at]


class TailLayout:
    """Where the tokens of positions ``start ...`` sit in a flat, position-major batch.

    Rows still holding a token are a prefix at every position. ``blocks`` are the
    :class:`_Block` s (position ranges, with their rows) solved one after the other.
    """

    def __init__(self, offsets, n_active, start, n_topics, device):
        self.start = start
        n_pos = len(n_active) - start
        self.blocks = []
        if n_pos <= 0:
            return
        active = torch.as_tensor(n_active[start:], device=device).view(1, -1)
        base = torch.as_tensor(offsets[start:], device=device).view(1, -1)
        # blocks over all the rows still there: a row solved on its own would restart
        # from its own first changed draw (a quarter less work), but the operations
        # on fewer rows cost more than that saves (measured). Each block's index is
        # built for its own rows and positions, never the (rows x positions) whole.
        first = 0
        while first < n_pos:
            n_rows = n_active[start + first]
            width = max(16, min(1024, _BLOCK_ELEMENTS // max(n_rows * n_topics, 1)))
            stop = min(n_pos, first + width)
            r = torch.arange(n_rows, device=device).view(-1, 1)
            index = torch.where(r < active[:, first:stop], base[:, first:stop] + r, -1)
            self.blocks.append(_Block(index, first, stop, 0, n_rows))
            first = stop


def fixed_point_sweep(layout, counts, z, u, tok, table, weights):
    """Sequential sweep of the positions of ``layout``, by fixed-point iteration (in place).

    Parameters
    ----------
    layout : TailLayout
    counts : tensor (rows, K), float32
        Topic counts of every row, all its tokens included (integer values).
    z : int64 tensor (tokens,)
        Per-token topics (the batch's flat layout), replaced by the new draws.
    u : tensor (tokens,)
        One uniform in (0, 1) per token.
    tok : int64 tensor (tokens,)
        Each token's row of ``table``.
    table : tensor (V', K), float32
        The word factor of the conditional.
    weights : tensor (K,) or callable
        The conditional's count factor: a tensor ``alpha`` for ``C + alpha`` (the
        usual Polya urn, computed as one fused multiply-add), or a callable mapping
        counts ``C`` (..., K) (the other tokens' counts, float32 with integer values)
        to the factor (..., K). It must be positive.

    Returns
    -------
    n_iterations : int
        Iterations over all blocks (a cost diagnostic).
    """
    n_iter = 0
    n_topics = counts.shape[1]
    linear = isinstance(weights, torch.Tensor)
    for block in layout.blocks:
        n_rows, n, ones = block.r1 - block.r0, block.stop - block.first, block.ones
        rows = counts[block.r0 : block.r1]
        z_old = z[block.at]
        old = torch.zeros(n_rows, n, n_topics, dtype=counts.dtype, device=counts.device)
        old.scatter_(2, z_old.unsqueeze(-1), ones)
        # past a row's end the word factor is 1 at the token's old topic and 0
        # elsewhere, so that the "draw" there is the old topic: no masking below
        tw = table.index_select(0, block.tok(tok).view(-1)).view(n_rows, n, n_topics) * ones
        tw.scatter_add_(2, z_old.unsqueeze(-1), 1.0 - ones)
        uu = u[block.at].unsqueeze(-1)
        # the counts token p sees while every token keeps its old topic; the new
        # draws of the block's earlier tokens are added as `shift` below
        stale = rows.unsqueeze(1) - old
        if linear:
            stale = (stale + weights) * tw
        z_new = z_old.clone()
        done = 0  # the draws before `done` are final
        carry = None  # sum over the final draws of (new - old) one-hots, (rows, 1, K)
        while done < n:
            n_iter += 1
            m = n - done
            if carry is None:  # every guess is still the old topic: no shift
                w = stale if linear else weights(stale) * tw
            else:
                # the shift each position sees: carry, then the guesses' changes before it
                shift = torch.zeros(n_rows, m, n_topics, dtype=counts.dtype, device=counts.device)
                shift[:, :1] = carry
                tail = slice(done, n - 1)
                shift[:, 1:].scatter_add_(2, z_new[:, tail].unsqueeze(-1), ones[:, tail])
                shift[:, 1:].scatter_add_(2, z_old[:, tail].unsqueeze(-1), -ones[:, tail])
                shift = torch.cumsum(shift, 1)
                if linear:
                    w = torch.addcmul(stale[:, done:], shift, tw[:, done:])
                else:
                    w = weights(stale[:, done:] + shift) * tw[:, done:]
            cum = torch.cumsum(w, -1)
            draw = torch.searchsorted(cum, uu[:, done:] * cum[..., -1:]).squeeze(-1)
            changed = (draw != z_new[:, done:]).any(0)
            z_new[:, done:] = draw
            if not bool(changed.any()):
                break
            # the draws up to the first change had final inputs
            last = int(torch.argmax(changed.to(torch.uint8)))
            step = torch.zeros(n_rows, 1, n_topics, dtype=counts.dtype, device=counts.device)
            if carry is not None:
                step += shift[:, last : last + 1]
            j = done + last
            step.scatter_add_(2, z_new[:, j : j + 1].unsqueeze(-1), ones[:, j : j + 1])
            step.scatter_add_(2, z_old[:, j : j + 1].unsqueeze(-1), -ones[:, j : j + 1])
            carry = step
            done = j + 1
        rows.scatter_add_(1, z_old, -ones[..., 0])
        rows.scatter_add_(1, z_new, ones[..., 0])
        z[block.flat] = z_new[block.valid]
    return n_iter
