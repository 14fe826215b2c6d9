"""Convolutional bodies shared by every head.

`LeNetBody` is the N-digit MNIST network of HIB and SPE (SPE Appendix A.3, "identical
to that used for HIB MNIST experiments"): conv 6@5x5 pad 2 -> ReLU -> max-pool 2 ->
conv 16@5x5 pad 2 -> ReLU -> max-pool 2 -> FC 120 -> ReLU. The final FC to the
embedding lives in the head (`hedgekit.models.heads`).
"""
from __future__ import annotations

from torch import Tensor, nn


class LeNetBody(nn.Module):
    """LeNet-style body for (B, C, H, W) images; outputs (B, 120) features.

    Weights use Xavier-uniform initialisation and zero biases (SPE Appendix A.3).
    """

    def __init__(self, in_channels: int = 1, height: int = 28, width: int = 56, features: int = 120):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
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
