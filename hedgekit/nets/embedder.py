"""`EmbeddingNet`: body + head + match calibration, and `build_model` for every kind the kit trains.

Every builder checks the network's size before it allocates anything: D and C against `MAX_DIM` and
`MAX_COMPONENTS`, and the memory training needs (`parameter_count` x `TRAINING_COPIES` floats) against the
budget of `hedgekit.checks.check_memory`, as HIB's K is checked (`hedgekit.methods.hib`).
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from hedgekit.checks import check_count, check_images, check_memory
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.nets.backbones import LSHAPE_BLOCKS, ConvBody, LeNetBody
from hedgekit.nets.heads import INIT_VAR, GaussianHead, HeteroscedasticHead, PointHead
from hedgekit.nets.match import SoftMatch

KINDS = ("point", "hib", "het")
# Sane bounds on the head. The papers train D <= 64 (URL: 16; HIB, SPE: 2-4) and C <= 3 mixture components; one
# linear branch per component is built in Python, so a million components would take minutes and gigabytes
# before the first step. The bounds leave room far beyond the papers; the memory check covers the rest.
MAX_DIM = 4096
MAX_COMPONENTS = 64
# float32 copies of every parameter while training: the weights, their gradients and Adam's two moments
TRAINING_COPIES = 4
_LENET_FEATURES = 120  # `LeNetBody`'s output features
_MATCH_PARAMETERS = 2  # `SoftMatch`: a (through softplus) and b


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
        dim: embedding dimension D (1..`MAX_DIM`; D = 1 for the number line of App. D).
        components: C mixture components for "hib" (MoG-1, MoG-2, ...; at most `MAX_COMPONENTS`).
    """
    n_digits = check_count(n_digits, "n_digits")
    width = 28 * n_digits if width is None else width
    config = dict(kind=kind, n_digits=n_digits, dim=dim, components=components,
                  in_channels=in_channels, height=height, width=width, init_var=init_var)
    config.update(check_model_size(config))  # before anything is allocated
    body = LeNetBody(in_channels, height, width)
    head = _head(kind, body.out_features, config["dim"], config["components"], init_var)
    return EmbeddingNet(body, head, SoftMatch(), config)


def check_model_size(config: dict) -> dict:
    """``{"dim": D, "components": C}`` of an `EmbeddingNet.config`, checked before anything is allocated.

    InputError unless ``kind`` is one of `KINDS`, D is an integer in 1..`MAX_DIM`, C one in 1..`MAX_COMPONENTS`
    (exactly 1 for "point" and "het"), and training the network (`TRAINING_COPIES` float32 copies of its
    `parameter_count`) fits `hedgekit.checks.check_memory`'s budget.
    """
    kind = config.get("kind")
    if kind not in KINDS:
        raise InputError(f"kind must be one of {KINDS}; got {kind!r}")
    dim = check_count(config["dim"], "dim", 1, MAX_DIM, " (the embedding dimension; the papers use 2-64)")
    components = check_count(config["components"], "components", 1, MAX_COMPONENTS,
                             " (mixture components, one linear branch each; the papers use 1-3)")
    if kind in ("point", "het") and components != 1:
        raise InputError(f"{kind} models have exactly one component; got components={components}")
    sizes = {k: check_count(config[k], k) for k in ("in_channels", "height", "width")
             + (("blocks", "channels") if config.get("body") == "conv" else ())}
    n = parameter_count({**config, **sizes, "dim": dim, "components": components})
    check_memory(TRAINING_COPIES * n, f"training a {kind} network of {n:,} parameters (D={dim}, C={components}, "
                 f"{sizes['height']} x {sizes['width']} input)", "use a smaller D, C or input")
    return {"dim": dim, "components": components}


def parameter_count(config: dict) -> int:
    """The number of parameters of the network ``config`` describes (an `EmbeddingNet.config`), without building it.

    LeNet (`LeNetBody`): conv 6@5x5, conv 16@5x5, FC to 120 on the 16 x (H // 4) x (W // 4) map; the conv body
    (`ConvBody`): per block a 3x3 conv and a batch-norm (weight and bias); heads: point D x (F + 1), HIB
    C x 2D x (F + 1), het (D + 1) x (F + 1) on F body features; 2 for the match calibration (`SoftMatch`).
    """
    c_in, h, w = config["in_channels"], config["height"], config["width"]
    if config.get("body") == "conv":
        blocks, ch = config["blocks"], config["channels"]
        body = (c_in * ch * 9 + ch + 2 * ch) + (blocks - 1) * (ch * ch * 9 + ch + 2 * ch)
        features = ch * (h >> blocks) * (w >> blocks)
    else:
        body = (c_in * 6 * 25 + 6) + (6 * 16 * 25 + 16) + (16 * (h // 4) * (w // 4) + 1) * _LENET_FEATURES
        features = _LENET_FEATURES
    outputs = {"point": config["dim"], "het": config["dim"] + 1,
               "hib": 2 * config["dim"] * config["components"]}[config["kind"]]
    return body + outputs * (features + 1) + _MATCH_PARAMETERS


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
    config = dict(body="conv", kind=kind, dim=dim, in_channels=in_channels, height=height, width=width,
                  blocks=blocks, channels=channels, components=components, init_var=init_var)
    config.update(check_model_size(config))
    body = ConvBody(in_channels, height, width, blocks, channels)  # checks that the blocks leave a map
    head = _head(kind, body.out_features, config["dim"], config["components"], init_var)
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
