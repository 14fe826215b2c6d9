"""Convolutional bodies shared by every head.

`LeNetBody` is the N-digit MNIST network of HIB and SPE (SPE Appendix A.3, "identical
to that used for HIB MNIST experiments"): conv 6@5x5 pad 2 -> ReLU -> max-pool 2 ->
conv 16@5x5 pad 2 -> ReLU -> max-pool 2 -> FC 120 -> ReLU. The final FC to the
embedding lives in the head (`hedgekit.nets.heads`).

`ConvBody` is SPE's convolutional body (Scott et al. 2019, App. A.1 Omniglot, App. A.2 L-shapes):
blocks of conv 64@3x3 (stride 1, zero-padding 1) -> batch-norm -> ReLU -> 2x2 max-pool, flattened.
The paper's final "conv 2d@3x3 + max-pool" block (whose output holds the mean and the variance)
becomes the head: on the tiny final map (3x3 or 2x2) that block reads a 2x2 window of 3x3
neighbourhoods, i.e. a linear map of (almost) the whole map followed by a max; one linear layer on
the flattened map is the plain, slightly more general version of it, and lets every head of the kit
sit on this body. Initialisation (A.1): conv weights He-normal (fan-in, ReLU gain), conv biases
U(-1/sqrt(fan_in), 1/sqrt(fan_in)); batch-norm starts at weight 1, bias 0.
"""
from __future__ import annotations

import math

from torch import Tensor, nn

from hedgekit.errors import InputError


class LeNetBody(nn.Module):
    """LeNet-style body for (B, C, H, W) images; outputs (B, 120) features.

    Weights use Xavier-uniform initialisation and zero biases (SPE Appendix A.3).
    """

    def __init__(self, in_channels: int = 1, height: int = 28, width: int = 56, features: int = 120):
        super().__init__()
        # max-pool before ReLU: ReLU is monotone, so it commutes with max and the outputs and gradients are
        # bit-identical to conv -> ReLU -> pool, with ReLU on 4x fewer values (docs/speed.md)
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, 6, 5, padding=2), nn.MaxPool2d(2), nn.ReLU(),
            nn.Conv2d(6, 16, 5, padding=2), nn.MaxPool2d(2), nn.ReLU(),
        )
        flat = 16 * (height // 4) * (width // 4)
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(flat, features), nn.ReLU())
        self.out_features = features
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.conv(x))


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
