"""The memory budget of the HIB loss (`hedgekit.methods.hib`): what its forms of eq. 5 hold at once.

Eq. 5 needs the distances of K x K sample pairs per pair of inputs: B K^2 for B explicit pairs (`hib_pair_loss`,
through `hedgekit.methods.contrastive.log_match`) and (BK)^2 for all pairs of a batch of B inputs (`hib_batch_loss`,
through its fast form `hedgekit.methods.all_pairs.all_pairs_nll`). `check_pair_memory` refuses a batch size and K
whose pair matrices would not fit, before anything is allocated; it is checked where they are set
(`hedgekit.training.fit.TrainConfig`).
"""
from __future__ import annotations

from hedgekit.checks import check_memory

# Pair-matrix-sized tensors alive at once, at most: d, the logits, their two sigmoids and the negated logits in
# `log_match` (pair loss); the all-pairs loss (`all_pairs_nll`) keeps fewer (d and one sigmoid, upper triangle).
_PAIR_COPIES = 5


def check_pair_memory(images: int, k: int, all_pairs: bool = True) -> None:
    """InputError, before anything is allocated, if the HIB loss's sample-pair distances do not fit the memory
    budget (`hedgekit.checks.check_memory`): (BK)^2 for all pairs of a batch of ``images`` = B (`hib_batch_loss`),
    B K^2 for B explicit pairs (`hib_pair_loss`). K counts as if every embedding were stochastic (a point embedding
    is its own single sample, but a config does not know its model)."""
    pairs = (images * k) ** 2 if all_pairs else images * k * k
    check_memory(_PAIR_COPIES * pairs, f"the HIB loss with K={k} on a batch of {images}",
                 "use a smaller K (the paper uses K = 8) or a smaller batch")
