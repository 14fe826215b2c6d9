"""The match NLL over all pairs of a batch, in one pass over the upper triangle (HIB eq. 5, eq. 8).

For a batch of B inputs with K Monte-Carlo samples each, HIB's all-pairs loss needs, for every
pair i < j, the Monte-Carlo match probability (eq. 5)

    p_ij = 1/K^2 sum_{k,l} sigmoid(-a ||z_i^(k) - z_j^(l)|| + b)

and the negative log-likelihood of the pair's label: -log p_ij for a matching pair, -log(1 - p_ij)
for a non-matching one, where 1 - p_ij is averaged from sigmoid(+a d - b) directly so that it keeps
full precision when p_ij is near 1 (as `hedgekit.methods.contrastive.log_match` does).

`all_pairs_nll` computes the same numbers as `log_match` on the full (BK x BK) distance matrix,
3.7-4.4x faster at K = 4-8 (the pair matrix was what made HIB training slow; docs/speed.md):

* only the blocks with i <= j are formed: the rows are cut into ``chunks`` groups and group r is
  compared with the columns from its own first row on (about (1 + 1/chunks) / 2 of the matrix);
* each pair needs only one of p and 1 - p, so the logit is multiplied by the pair's sign
  (+1 matching, -1 not) and a single sigmoid gives the probability of the observed label;
* the backward pass is written out (a custom `torch.autograd.Function`): with
  E = dL/d(logit) per sample pair and W = -a E / d, the gradient of sample z_k of the rows is
  z_k sum_l W_kl - (W z_cols)_k, two thin matrix products instead of a (BK, BK, D) tensor.
  Pairs of samples at distance exactly 0 get gradient 0 (the norm's subgradient at 0).

The probability is floored at 1e-38 before the log, with zero gradient below the floor, as in
`log_match`. Results equal `log_match`'s to float rounding (tested against it, values and gradients).

A batch needs both matching and non-matching pairs (else one mean is over no pairs: NaN); the class-balanced batches
of `hedgekit.training.fit` have both (`hedgekit.training.fit.TrainConfig` asks for P >= 2 classes of Q >= 2 images).
"""
from __future__ import annotations

import torch
from torch import Tensor

from hedgekit.checks import check_count
from hedgekit.hardware import launch_bound
from hedgekit.methods.contrastive import TINY, masked_sum


def _row_chunks(b: int, chunks: int) -> list[tuple[int, int]]:
    step = -(-b // max(1, min(chunks, b)))
    return [(r0, min(r0 + step, b)) for r0 in range(0, b, step)]


class _AllPairsNLL(torch.autograd.Function):
    """(2,) tensor: mean -log p over matching pairs i < j, mean -log(1 - p) over non-matching ones."""

    @staticmethod
    def forward(ctx, s: Tensor, a: Tensor, b: Tensor, same: Tensor, chunks: int) -> Tensor:
        n, k, dim = s.shape
        sign = same.to(s.dtype) * 2 - 1  # (B, B): +1 matching, -1 not
        upper = torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1)
        pos_mask, neg_mask = upper & same, upper & ~same
        totals = s.new_zeros(2)
        saved = []
        for r0, r1 in _row_chunks(n, chunks):
            rows, cols = s[r0:r1].reshape(-1, dim), s[r0:].reshape(-1, dim)
            d = torch.cdist(rows, cols).view(r1 - r0, k, n - r0, k)
            sg = sign[r0:r1, r0:, None].unsqueeze(1)  # (c, 1, n - r0, 1)
            u = torch.addcmul(b * sg, d, -a * sg).sigmoid_()  # probability of the pair's own label
            m = u.mean((1, 3))
            log_m = m.clamp_min(TINY).log()
            totals[0] -= masked_sum(log_m, pos_mask[r0:r1, r0:])
            totals[1] -= masked_sum(log_m, neg_mask[r0:r1, r0:])
            saved.append((d, u, m))
        counts = torch.stack([pos_mask.sum(), neg_mask.sum()]).to(s.dtype)
        ctx.saved = saved
        ctx.chunks = chunks
        ctx.save_for_backward(s, a, sign, pos_mask, neg_mask, counts)
        return totals / counts

    @staticmethod
    def backward(ctx, grad: Tensor):
        s, a, sign, pos_mask, neg_mask, counts = ctx.saved_tensors
        n, k, dim = s.shape
        g_pos, g_neg = grad / counts
        grad_s = torch.zeros_like(s).view(-1, dim)
        grad_a, grad_b = s.new_zeros(()), s.new_zeros(())
        for (r0, r1), (d, u, m) in zip(_row_chunks(n, ctx.chunks), ctx.saved):
            # dL/dm per pair (zero below the floor and off the upper triangle), times sign: dL/d(-a d + b) = E
            w = (pos_mask[r0:r1, r0:] * g_pos + neg_mask[r0:r1, r0:] * g_neg) * (m > TINY)
            coef = (-w / (m.clamp_min(TINY) * k * k) * sign[r0:r1, r0:])[:, None, :, None]
            e = (1 - u).mul_(u).mul_(coef)
            grad_b += e.sum()
            grad_a -= torch.dot(e.view(-1), d.view(-1))
            wm = e.mul_(-a).div_(d).nan_to_num_(0.0, 0.0, 0.0).view((r1 - r0) * k, (n - r0) * k)
            rows, cols = s[r0:r1].reshape(-1, dim), s[r0:].reshape(-1, dim)
            # (D, n) @ (n, m) products: MKL is ~10x slower on the (n, m) @ (m, D) form with D = 2
            grad_s[r0 * k:r1 * k] += rows * wm.sum(1, keepdim=True) - (cols.t() @ wm.t()).t()
            grad_s[r0 * k:] += cols * wm.sum(0).unsqueeze(1) - (rows.t() @ wm).t()
        return grad_s.view(n, k, dim), grad_a, grad_b, None, None


def all_pairs_nll(samples: Tensor, a: Tensor, b: Tensor, same: Tensor, chunks: int | None = None) -> Tensor:
    """Mean match NLL of the matching and of the non-matching pairs i < j of a batch (HIB eq. 5, 8).

    Args:
        samples: (B, K, D) K samples per input (K = 1 and the mean for point embeddings).
        a, b: the calibrated match's slope (> 0) and offset (HIB eq. 2), 0-d tensors.
        same: (B, B) bool, True where inputs i and j match (only i < j is read).
        chunks: row groups of the triangle (more: closer to half the matrix, more, smaller ops). None: 8 on
            the CPU, where arithmetic costs; 1 where a step is launch-bound (`hedgekit.hardware.launch_bound`:
            a GPU), where a fifth of the kernels wins over 44% less arithmetic.

    Returns:
        (2,) tensor [mean over matching pairs of -log p, mean over non-matching pairs of -log(1 - p)],
        differentiable with respect to ``samples``, ``a`` and ``b``.
    """
    chunks = (1 if launch_bound(samples.device) else 8) if chunks is None else check_count(chunks, "chunks")
    return _AllPairsNLL.apply(samples, a.to(samples.dtype), b.to(samples.dtype), same, chunks)
