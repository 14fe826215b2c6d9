"""The training set on the training device, and one step's batch drawn from it: the device-resident path.

Every trainer (`hedgekit.training.fit.fit`, `hedgekit.training.episodic.fit_episodic`,
`hedgekit.training.triplets.fit_triplets`, `hedgekit.training.upstream.fit_upstream`) builds its batches here:

* the images are moved to the device once, in the dtype they are stored in (uint8 MNIST: a quarter of the
  float32 memory; 60k 28 x 56 images are 94 MB);
* each step's indices come from the trainer's sampler on the host (numpy: the random stream every shipped and
  cached checkpoint was trained with, so those stay exactly reproducible) and travel to the device as one
  small copy, which does not make the host wait for the device;
* the images are gathered and occluded on the device (`hedgekit.data.occlusion.RandomOcclusion` works on uint8
  and float alike) and handed to the model still as uint8 where they are stored so: the network converts them
  to float in [0, 1] without reading their values (`hedgekit.checks.check_images`), so no step waits on the
  device. A float data set's range is checked once, whole, by the trainer (`hedgekit.checks.check_training_set`),
  and the model's own input check, which reads the values, runs at log steps only
  (`hedgekit.checks.deferred_value_checks`);
* another ``augment`` (the kit's contract: a float batch in [0, 1]) gets the batch as float.

On the CPU the batches are bit-identical to those the trainers built before (tests/training/test_batches.py).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch
from torch import Tensor

from hedgekit.data.occlusion import RandomOcclusion

Augment = Callable[[Tensor, np.random.Generator], Tensor]


def to_float(x: Tensor) -> Tensor:
    """uint8 pixels 0..255 -> float32 in [0, 1] (as `hedgekit.checks.check_images` converts them); floats as
    float32."""
    return x.float().div_(255.0) if x.dtype == torch.uint8 else x.float()


class DeviceImages:
    """Images (N, [C,] H, W), uint8 or float, held once on ``device`` as (N, C, H, W).

    ``batch(idx, augment, rng)`` gathers the images at ``idx`` (numpy or tensor indices) and applies
    ``augment`` (module docstring) in ``memory_format``.
    """

    def __init__(self, images: Tensor, device: torch.device, memory_format=torch.contiguous_format):
        images = torch.as_tensor(images)
        self.images = (images.unsqueeze(1) if images.ndim == 3 else images).to(device)
        self.device, self.memory_format = torch.device(device), memory_format

    def __len__(self) -> int:
        return len(self.images)

    def indices(self, idx) -> Tensor:
        """``idx`` (numpy array or tensor) as an int64 tensor on the device."""
        idx = torch.from_numpy(np.ascontiguousarray(idx)) if isinstance(idx, np.ndarray) else torch.as_tensor(idx)
        return idx.to(self.device, torch.long, non_blocking=True)

    def batch(self, idx, augment: Augment | None = None, rng: np.random.Generator | None = None) -> Tensor:
        """The (B, C, H, W) batch at ``idx``, augmented, on the device; uint8 where the set is stored as uint8
        and no float ``augment`` ran, else float32."""
        x = self.images[self.indices(idx)]
        if augment is not None:
            x = augment(x, rng) if isinstance(augment, RandomOcclusion) else augment(to_float(x), rng)
        return x.contiguous(memory_format=self.memory_format)
