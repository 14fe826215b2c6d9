"""`EmbeddingNet`: body + head + match calibration, and `build_model` for every kind the kit trains."""
from __future__ import annotations

import torch
from torch import Tensor, nn

from hedgekit.checks import check_count, check_images
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.nets.backbones import LSHAPE_BLOCKS, ConvBody, LeNetBody
from hedgekit.nets.heads import INIT_VAR, GaussianHead, HeteroscedasticHead, PointHead
from hedgekit.nets.match import SoftMatch

KINDS = ("point", "hib", "het")


class EmbeddingNet(nn.Module):
    """x -> :class:`Embedding`. ``config`` holds everything `build_model` needs to rebuild it."""

    def __init__(self, body: nn.Module, head: nn.Module, match: SoftMatch, config: dict):
        super().__init__()
        self.body, self.head, self.match = body, head, match
        self.config = dict(config)

    @property
    def input_shape(self) -> tuple[int, int, int]:
        c = self.config
        return (c["in_channels"], c["height"], c["width"])

    def check_input(self, x: Tensor) -> Tensor:
        """Validate a batch of images (`hedgekit.checks.check_images`): (B, C, H, W), or (B, H, W) for one
        channel, uint8 or float pixels in [0, 1], B >= 1; returns float32 in [0, 1]."""
        return check_images(x, self.input_shape)

    def forward(self, x: Tensor) -> Embedding:
        h = self.body(self.check_input(x))
        # Under mixed precision (`hedgekit.training.fit.TrainConfig.precision`) only the body runs in bfloat16;
        # the head's means and variances, and all that is computed from them, stay float32.
        with torch.autocast(h.device.type, enabled=False):
            return self.head(h.float())

    @torch.no_grad()
    def embed(self, x: Tensor, batch_size: int = 2048) -> Embedding:
        """Embed many images in eval mode, in chunks, on the model's device; result on CPU.

        Images as for `forward`; an empty batch is an InputError (nothing to embed), as is a
        ``batch_size`` that is not an integer >= 1.
        """
        batch_size = check_count(batch_size, "batch_size")
        check_images(x[:1] if isinstance(x, Tensor) else x, self.input_shape)  # type, dtype, shape, B >= 1 up front
        was_training = self.training
        self.eval()
        device = next(self.parameters()).device
        try:
            parts = [self(x[i : i + batch_size].to(device)).to("cpu") for i in range(0, len(x), batch_size)]
        finally:
            self.train(was_training)
        return Embedding.cat(parts)


def build_model(
    kind: str = "hib",
    n_digits: int = 2,
    dim: int = 2,
    components: int = 1,
    in_channels: int = 1,
    height: int = 28,
    width: int | None = None,
    init_var: float = INIT_VAR,
) -> EmbeddingNet:
    """Build a LeNet embedding model for N-digit MNIST (28 x 28N images by default).

    Args:
        kind: "point" (soft contrastive, HIB eq. 2-3), "hib" (MoG-C, HIB sec. 2.2) or "het" (an embedding
            plus one log-variance per input, Taha et al. 2019 eq. 11; `HeteroscedasticHead`).
        dim: embedding dimension D (any D >= 1; D = 1 for the number line of App. D).
        components: C mixture components for "hib" (MoG-1, MoG-2, ...).
    """
    if kind not in KINDS:
        raise InputError(f"kind must be one of {KINDS}; got {kind!r}")
    dim, components, n_digits = (check_count(v, n) for v, n in ((dim, "dim"), (components, "components"),
                                                                 (n_digits, "n_digits")))
    if kind in ("point", "het") and components != 1:
        raise InputError(f"{kind} models have exactly one component; got components={components}")
    width = 28 * n_digits if width is None else width
    config = dict(kind=kind, n_digits=n_digits, dim=dim, components=components,
                  in_channels=in_channels, height=height, width=width, init_var=init_var)
    body = LeNetBody(in_channels, height, width)
    return EmbeddingNet(body, _head(kind, body.out_features, dim, components, init_var), SoftMatch(), config)


def _head(kind: str, in_features: int, dim: int, components: int, init_var: float) -> nn.Module:
    """The head of each kind in `KINDS`."""
    if kind == "point":
        return PointHead(in_features, dim)
    if kind == "het":
        return HeteroscedasticHead(in_features, dim, init_var)
    return GaussianHead(in_features, dim, components, init_var)


def model_from_config(config: dict) -> EmbeddingNet:
    """Rebuild an untrained model from ``EmbeddingNet.config`` (LeNet or, with body="conv", ConvBody)."""
    if config.get("body") == "conv":
        return conv_model_from_config(config)
    return build_model(**config)


def build_conv_model(
    kind: str = "hib",
    dim: int = 2,
    in_channels: int = 3,
    height: int = 64,
    width: int = 64,
    blocks: int = LSHAPE_BLOCKS,
    channels: int = 64,
    components: int = 1,
    init_var: float = INIT_VAR,
) -> EmbeddingNet:
    """`ConvBody` + head as an `EmbeddingNet`; ``kind`` "point" (PN), "hib" (Gaussian; SPE uses C = 1) or "het".

    Omniglot-sized: ``build_conv_model(in_channels=1, height=28, width=28, blocks=3)``.
    ``model.config`` records ``body="conv"`` and every argument; `conv_model_from_config` rebuilds it.
    """
    if kind not in KINDS:
        raise InputError(f"kind must be one of {KINDS}; got {kind!r}")
    dim, components = check_count(dim, "dim"), check_count(components, "components")
    if kind in ("point", "het") and components != 1:
        raise InputError(f"{kind} models have exactly one component; got components={components}")
    body = ConvBody(in_channels, height, width, blocks, channels)
    head = _head(kind, body.out_features, dim, components, init_var)
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
