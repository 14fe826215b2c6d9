from hedgekit.methods.contrastive import (contrastive_from_distance, hard_contrastive, hard_contrastive_all_pairs,
                                          log_match, soft_contrastive)
from hedgekit.methods.hib import hib_batch_loss, hib_pair_loss, kl_to_standard_normal
from hedgekit.data.samplers import ClassBalancedSampler, two_stream_pairs
# URL methods register themselves in upstream.METHODS when imported
from hedgekit.methods import (ce, elk, ensemble, hetxl, infonce, losspred, mcdropout, mcinfonce, nivmf,  # noqa: F401
                              sngp, url_hib)
from hedgekit.methods.upstream import METHODS, UpstreamMethod, build_method
from hedgekit.methods.pn import PN, pn_log_posterior, pn_prototypes
from hedgekit.methods.spe import gaussian_product, spe_prototypes
from hedgekit.methods.fast.spe import SPE, gamma_init, log_posterior_intersection, log_posterior_naive

__all__ = [
    "contrastive_from_distance", "hard_contrastive", "hard_contrastive_all_pairs", "log_match", "soft_contrastive",
    "hib_batch_loss", "hib_pair_loss", "kl_to_standard_normal", "ClassBalancedSampler", "two_stream_pairs",
    "PN", "SPE", "gamma_init", "gaussian_product", "log_posterior_intersection", "log_posterior_naive",
    "pn_log_posterior", "pn_prototypes", "spe_prototypes",
    "METHODS", "UpstreamMethod", "build_method",
]
