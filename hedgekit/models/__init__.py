from .backbones import LeNetBody
from .embedder import EmbeddingNet, build_model, model_from_config
from .heads import GaussianHead, PointHead
from .match import SoftMatch

__all__ = ["LeNetBody", "EmbeddingNet", "build_model", "model_from_config", "GaussianHead", "PointHead", "SoftMatch"]
