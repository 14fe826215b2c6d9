"""The SPE convolutional body (Scott et al. 2019, App. A.1 Omniglot, App. A.2 synthetic L-shapes).

Paper: blocks of conv 64@3x3 (stride 1, zero-padding 1) -> batch-norm -> ReLU -> 2x2 max-pool;
a final block "conv 2d@3x3 pad 1 -> 2x2 max-pool" whose flattened output (length 2d) holds the mean
(first d) and the variance (last d). Omniglot (28x28): 3 blocks of 64 + the final 2d block (A.1);
L-shapes (64x64): "two additional blocks", i.e. 5 blocks of 64 + the final 2d block (A.2).

How the kit maps this onto body + head (`EmbeddingNet`):

* `ConvBody(in_channels, height, width, blocks)` is the stack of 64-filter blocks, flattened:
  ``out_features = 64 * (height // 2**blocks) * (width // 2**blocks)`` (Omniglot: 64*3*3 = 576,
  L-shapes: 64*2*2 = 256).
* The paper's final "conv 2d@3x3 + max-pool" block becomes the head: flatten -> one linear layer to
  2d (`GaussianHead`: first d mean, last d softplus variance, App. B) or to d (`PointHead`, PN).
  On the tiny final map (3x3 or 2x2) the paper's conv + pool reads a 2x2 window of 3x3 neighbourhoods,
  i.e. a linear map of (almost) the whole map followed by a max; a linear layer on the whole flattened
  map is the plain, slightly more general version of it, and lets every head of the kit sit on this body.
* Initialisation (A.1): conv weights He-normal (fan-in, ReLU gain), conv biases
  U(-1/sqrt(fan_in), 1/sqrt(fan_in)); batch-norm starts at weight 1, bias 0. The head keeps its own
  initialisation (`GaussianHead`: Xavier, variance bias set to ``init_var``) so every model kind starts
  with the same variance.
"""
from __future__ import annotations

import math

from torch import Tensor, nn

from ..errors import InputError
from ..losses.prototypes import SPE_INIT_VAR
from .embedder import KINDS, EmbeddingNet
from .heads import GaussianHead, PointHead
from .match import SoftMatch

LSHAPE_BLOCKS = 5  # App. A.2: the Omniglot net's 3 blocks of 64 + "two additional blocks" (64x64 -> 2x2)
OMNIGLOT_BLOCKS = 3  # App. A.1: three blocks of 64 filters before the final 2d block (28x28 -> 3x3)


class ConvBody(nn.Module):
    """``blocks`` x (conv ``channels``@3x3 pad 1 -> BatchNorm -> ReLU -> max-pool 2), then flatten.

    Args:
        in_channels, height, width: input image shape (C, H, W).
        blocks: number of conv blocks (each halves H and W, rounding down).
        channels: filters per conv (64 in the paper).
    """

    def __init__(self, in_channels: int = 3, height: int = 64, width: int = 64, blocks: int = LSHAPE_BLOCKS,
                 channels: int = 64):
        super().__init__()
        if min(in_channels, height, width, blocks, channels) < 1:
            raise InputError(f"in_channels, height, width, blocks and channels must be >= 1; "
                             f"got {in_channels}, {height}, {width}, {blocks}, {channels}")
        h, w = height >> blocks, width >> blocks
        if h < 1 or w < 1:
            raise InputError(f"{blocks} max-pool blocks shrink a {height}x{width} image to nothing; "
                             f"use at most {int(math.log2(min(height, width)))} blocks")
        layers, c = [], in_channels
        for _ in range(blocks):
            layers += [nn.Conv2d(c, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(), nn.MaxPool2d(2)]
            c = channels
        self.features = nn.Sequential(*layers, nn.Flatten())
        self.out_features = channels * h * w
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")  # He init (A.1)
                fan_in = m.in_channels * m.kernel_size[0] * m.kernel_size[1]
                nn.init.uniform_(m.bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))

    def forward(self, x: Tensor) -> Tensor:
        return self.features(x)


def build_conv_model(
    kind: str = "hib",
    dim: int = 2,
    in_channels: int = 3,
    height: int = 64,
    width: int = 64,
    blocks: int = LSHAPE_BLOCKS,
    channels: int = 64,
    components: int = 1,
    init_var: float = SPE_INIT_VAR,
) -> EmbeddingNet:
    """`ConvBody` + head as an `EmbeddingNet`; ``kind`` "point" (PN) or "hib" (Gaussian; SPE uses C = 1).

    ``init_var`` defaults to 1.0 (`hedgekit.losses.prototypes.SPE_INIT_VAR`), not `build_model`'s 1e-2:
    these are SPE's networks, and SPE variances starting far below sigma_eps^2 collapse.

    Omniglot-sized: ``build_conv_model(in_channels=1, height=28, width=28, blocks=3)``.
    ``model.config`` records ``body="conv"`` and every argument; `conv_model_from_config` rebuilds it.
    """
    if kind not in KINDS:
        raise InputError(f"kind must be one of {KINDS}; got {kind!r}")
    if dim < 1 or components < 1:
        raise InputError(f"dim and components must be >= 1; got {dim}, {components}")
    if kind == "point" and components != 1:
        raise InputError("point models have exactly one component")
    body = ConvBody(in_channels, height, width, blocks, channels)
    if kind == "point":
        head = PointHead(body.out_features, dim)
    else:
        head = GaussianHead(body.out_features, dim, components, init_var)
    config = dict(body="conv", kind=kind, dim=dim, in_channels=in_channels, height=height, width=width,
                  blocks=blocks, channels=channels, components=components, init_var=init_var)
    return EmbeddingNet(body, head, SoftMatch(), config)


def build_lshape_model(kind: str = "hib", dim: int = 2, **kwargs) -> EmbeddingNet:
    """The App. A.2 network for 3x64x64 L-shape images (5 blocks of 64 filters + head to 2d)."""
    kwargs.setdefault("in_channels", 3)
    kwargs.setdefault("height", 64)
    kwargs.setdefault("width", 64)
    kwargs.setdefault("blocks", LSHAPE_BLOCKS)
    return build_conv_model(kind, dim, **kwargs)


def conv_model_from_config(config: dict) -> EmbeddingNet:
    """Rebuild an untrained conv model from ``EmbeddingNet.config`` (``config["body"] == "conv"``)."""
    config = dict(config)
    if config.pop("body", "conv") != "conv":
        raise InputError(f"not a conv-body config: {config!r}")
    return build_conv_model(**config)
