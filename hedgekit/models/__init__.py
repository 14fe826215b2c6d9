from .backbones import LeNetBody
from .convnet import ConvBody, build_conv_model, build_lshape_model
from .embedder import EmbeddingNet, build_model, model_from_config
from .heads import GaussianHead, PointHead
from .match import SoftMatch

__all__ = ["LeNetBody", "ConvBody", "build_conv_model", "build_lshape_model", "EmbeddingNet", "build_model", "model_from_config", "GaussianHead", "PointHead", "SoftMatch"]
