"""Networks: bodies (`backbones`), heads that return an `Embedding` (`heads`), HIB's match
calibration (`match`) and the `EmbeddingNet` that joins them, with its builders (`embedder`)."""
from hedgekit.nets.backbones import ConvBody, LeNetBody
from hedgekit.nets.embedder import (EmbeddingNet, build_conv_model, build_lshape_model, build_model,
                                    model_from_config)
from hedgekit.nets.heads import INIT_VAR, GaussianHead, PointHead
from hedgekit.nets.match import SoftMatch

__all__ = ["LeNetBody", "ConvBody", "build_conv_model", "build_lshape_model", "EmbeddingNet", "build_model",
           "model_from_config", "GaussianHead", "PointHead", "SoftMatch", "INIT_VAR"]
