"""hedgekit.interactive.inputs: box checks by hand, every kind of bad file refused with its reason, every image
mode decoded to the same digit, drawings and large uploads scaled like MNIST."""
from __future__ import annotations

import io

import numpy as np
import pytest

from hedgekit.errors import InputError
from hedgekit.interactive import inputs


def _encode(arr: np.ndarray, mode: str = "L") -> bytes:
    """``arr`` (8-bit values, or 16-bit for "I;16") saved as a PNG in PIL ``mode`` (or a JPEG: "...-JPEG")."""
    from PIL import Image

    buf = io.BytesIO()
    if mode in ("I;16", "I;16B"):
        arr16 = arr.astype(np.uint16) if arr.dtype == np.uint16 else arr.astype(np.uint16) * 257
        im = Image.frombytes(mode, arr.shape[::-1], arr16.astype(">u2" if mode == "I;16B" else "<u2").tobytes())
    elif mode == "I":  # 32-bit integer pixels: PNG cannot hold them, TIFF can
        Image.fromarray(arr.astype(np.int32) * 257).save(buf, format="TIFF")
        return buf.getvalue()
    elif mode == "1":
        im = Image.fromarray(arr).convert("1", dither=Image.Dither.NONE)
    elif mode == "P+transparency":
        im = Image.fromarray(arr).convert("P")
    elif mode.endswith("-JPEG"):
        im = Image.fromarray(arr).convert(mode.split("-")[0])
        im.save(buf, format="JPEG", quality=95)
        return buf.getvalue()
    else:
        im = Image.fromarray(arr).convert(mode)
    im.save(buf, format="PNG", **({"transparency": 0} if mode == "P+transparency" else {}))
    return buf.getvalue()


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims ``width`` x ``height`` 8-bit gray pixels, followed by a tiny IDAT (a bomb's header)."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def _truncated() -> tuple[bytes, str]:
    img = np.random.default_rng(0).integers(0, 256, (28, 56), dtype=np.uint8)
    data = _encode(img)
    return data[: len(data) // 2], "not an image that can be read"


BAD_FILES = {  # name -> () -> (bytes, what the error must say)
    "empty": lambda: (b"", "empty"),
    "random bytes": lambda: (np.random.default_rng(1).integers(0, 256, 4000, dtype=np.uint8).tobytes(),
                             "not an image"),
    "text": lambda: (b"hello, not an image at all", "not an image"),
    "truncated PNG": _truncated,
    "PNG signature only": lambda: (b"\x89PNG\r\n\x1a\n", "not an image"),
    "huge header (bomb)": lambda: (_png_header(100_000, 100_000), "too large.*at most 4096"),
    "10000 x 10000 header": lambda: (_png_header(10_000, 10_000), "at most 4096"),
    "wide header": lambda: (_png_header(5000, 28), "at most 4096"),
    "1 x 1": lambda: (_encode(np.zeros((1, 1), np.uint8)), "needs at least 56 x 28"),
    "28 x 28": lambda: (_encode(np.zeros((28, 28), np.uint8)), "needs at least 56 x 28"),
    "too many bytes": lambda: (b"\x89PNG" + b"\0" * (inputs.MAX_UPLOAD_BYTES + 1), "MB"),
    "blank large image": lambda: (_encode(np.zeros((280, 560), np.uint8)), "blank"),
    "CRC-corrupt PNG": lambda: (_encode(np.zeros((28, 56), np.uint8))[:40] + b"\xff\xff"
                                + _encode(np.zeros((28, 56), np.uint8))[42:], "not an image"),
}


class TestInputs:
    def test_check_boxes_accepts_and_rejects(self):
        assert inputs.check_boxes([]).shape == (0, 4)
        np.testing.assert_array_equal(inputs.check_boxes([[0, 0, 28, 56]]), [[0, 0, 28, 56]])
        np.testing.assert_array_equal(inputs.check_boxes((1, 2, 3, 4)), [[1, 2, 3, 4]])
        with pytest.raises(InputError, match="zero area"):
            inputs.check_boxes([[3, 4, 0, 5]])
        with pytest.raises(InputError, match="rectangle 2 .* outside"):
            inputs.check_boxes([[0, 0, 5, 5], [20, 50, 10, 10]])
        with pytest.raises(InputError, match="outside"):
            inputs.check_boxes([[-1, 0, 5, 5]])
        with pytest.raises(InputError, match="whole pixel"):
            inputs.check_boxes([[0.5, 0, 5, 5]])
        with pytest.raises(InputError, match="quadruples"):
            inputs.check_boxes([[1, 2, 3]])

    def test_box_from_drag(self):
        # pixel c covers [c - 0.5, c + 0.5]: a drag over x in [-0.5, 27.5], y in [-0.5, 27.5] is the left digit
        np.testing.assert_array_equal(inputs.box_from_drag([-0.5, 27.5], [27.5, -0.5]), inputs.full_digit_box(0))
        np.testing.assert_array_equal(inputs.box_from_drag([10.2, 19.6], [3.4, 7.7]), [4, 11, 4, 9])
        np.testing.assert_array_equal(inputs.box_from_drag([50.2, 80], [-10, 100]), [0, 51, 28, 5])  # clipped
        with pytest.raises(InputError, match="outside"):
            inputs.box_from_drag([60, 80], [0, 10])
        with pytest.raises(InputError, match="zero area"):
            inputs.box_from_drag([5, 5.1], [0, 10])

    def test_digit_boxes_and_coverage(self):
        np.testing.assert_array_equal(inputs.digit_box(1, (2, 10), (5, 3)), [2, 31, 8, 2])
        assert inputs.digit_box(0, (4, 4), (0, 28)) is None
        with pytest.raises(InputError, match="0..28"):
            inputs.digit_box(0, (0, 29), (0, 5))
        assert inputs.covered_fraction([inputs.full_digit_box(1)]) == 0.5
        assert inputs.covered_fraction([inputs.full_digit_box(0), inputs.full_digit_box(1), [0, 0, 5, 5]]) == 1.0

    def test_check_image(self):
        img = np.zeros((28, 56), np.uint8)
        assert inputs.check_image(img) is img
        np.testing.assert_array_equal(inputs.check_image(np.ones((28, 56))), 255)
        with pytest.raises(InputError, match="28 x 56"):
            inputs.check_image(np.zeros((28, 28)))
        with pytest.raises(InputError, match=r"\[0, 1\]"):
            inputs.check_image(np.full((28, 56), 3.5))
        with pytest.raises(InputError, match="NaN"):
            inputs.check_image(np.full((28, 56), np.nan))

    def test_image_from_bytes(self):
        img = np.zeros((28, 56), np.uint8)
        img[5:20, 10:15] = 255
        np.testing.assert_array_equal(inputs.image_from_bytes(_encode(img)), img)
        np.testing.assert_array_equal(inputs.image_from_bytes(_encode(255 - img)), img)  # dark-on-white is inverted
        with pytest.raises(InputError, match="needs at least 56 x 28"):
            inputs.image_from_bytes(_encode(np.zeros((28, 28), np.uint8)))
        with pytest.raises(InputError, match="not an image"):
            inputs.image_from_bytes(b"certainly not a PNG")
        with pytest.raises(InputError, match="empty"):
            inputs.image_from_bytes(b"")

    @pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
    @pytest.mark.parametrize("name", sorted(BAD_FILES))
    def test_bad_files_get_a_clear_error(self, name):
        """Every kind of bad file is refused with an InputError naming the problem (never another exception)."""
        data, why = BAD_FILES[name]()
        with pytest.raises(InputError, match=why):
            inputs.image_from_bytes(data)

    @pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
    def test_huge_header_is_refused_before_decoding(self, monkeypatch):
        """A 10000 x 10000 (or 60000 x 60000) header is refused without decoding a pixel."""
        from PIL import ImageFile

        def no_decoding(*args, **kwargs):
            raise AssertionError("pixels were decoded")

        monkeypatch.setattr(ImageFile.ImageFile, "load", no_decoding)
        for side in (10_000, 60_000):
            with pytest.raises(InputError, match="at most 4096 x 4096"):
                inputs.image_from_bytes(_png_header(side, side))

    @pytest.mark.parametrize("mode", ["I;16", "I;16B", "I", "L", "LA", "RGB", "RGBA", "P", "P+transparency", "1",
                                      "CMYK-JPEG", "RGB-JPEG"])
    def test_modes_keep_their_brightness(self, mode):
        """The same digit saved in every mode decodes to (about) the same 8-bit image: 16-bit is scaled by its
        range, colour becomes luminance, transparency becomes background."""
        ref = np.zeros((28, 56), np.uint8)
        ref[4:24, 8:14] = 255
        ref[6:22, 36:46] = 200
        got = inputs.image_from_bytes(_encode(ref, mode))
        tol = {"CMYK-JPEG": 40, "RGB-JPEG": 40}.get(mode, 1)
        if mode == "1":  # 1 bit: only black and white survive; 200 rounds to white
            ref = np.where(ref > 127, 255, 0).astype(np.uint8)
        assert np.abs(got.astype(int) - ref).max() <= tol, (mode, np.abs(got.astype(int) - ref).max())
        assert got.dtype == np.uint8 and got.shape == (28, 56)

    def test_sixteen_bit_ranges(self):
        """White of a 16-bit file is 65535; 12-bit data stored in 16 bits (max 4095) is scaled by 4095; 8-bit
        values stored in 16 bits stay as they are."""
        ref = np.zeros((28, 56), np.uint16)
        ref[4:24, 8:14] = 1
        for white in (65535, 4095, 255):
            got = inputs.image_from_bytes(_encode((ref * white).astype(np.uint16), "I;16"))
            np.testing.assert_array_equal(got, (ref * 255).astype(np.uint8))

    def test_transparent_background(self):
        """Dark strokes on a transparent background read as dark-on-white (inverted); light strokes as light on
        black: either way the digit comes out white on black."""
        from PIL import Image

        for stroke in (0, 255):
            rgba = np.zeros((28, 56, 4), np.uint8)
            rgba[..., :3] = 255 - stroke  # hidden colour behind alpha = 0 must not matter
            rgba[4:24, 8:14] = (stroke, stroke, stroke, 255)
            buf = io.BytesIO()
            Image.fromarray(rgba, "RGBA").save(buf, format="PNG")
            got = inputs.image_from_bytes(buf.getvalue())
            assert got[10, 10] == 255 and got[0, 0] == 0 and got[10, 40] == 0, stroke

    def test_a_fully_transparent_image_is_refused_as_transparent(self):
        """Every pixel at alpha 0 (whatever colour hides behind it, a digit included), in RGBA, LA, a palette with a
        transparent entry and every frame of an animated PNG: the message says transparent, not a gray level; an
        opaque flat image is still "blank"."""
        from PIL import Image

        def png(frames, mode):
            buf = io.BytesIO()
            ims = [Image.fromarray(f, mode) for f in frames]
            ims[0].save(buf, format="PNG", save_all=len(ims) > 1, append_images=ims[1:])
            return buf.getvalue()

        hidden = np.zeros((28, 56, 4), np.uint8)
        hidden[4:24, 8:14, :3] = 255  # a digit, but alpha 0 everywhere
        cases = {"RGBA": png([hidden], "RGBA"), "LA": png([np.zeros((28, 56, 2), np.uint8)], "LA"),
                 "P+transparency": _encode(np.zeros((28, 56), np.uint8), "P+transparency")}
        for mode, data in cases.items():
            with pytest.raises(InputError) as err:
                inputs.image_from_bytes(data)
            assert str(err.value) == ("the image is fully transparent (every pixel's alpha is 0), no digit to read "
                                      "(the model needs two digits side by side)"), mode
        white = hidden.copy()
        white[..., :3] = 255
        with pytest.raises(InputError, match=r"^the image is fully transparent \(every pixel's alpha is 0\) "
                                             r"\(all 2 frames\), no digit"):
            inputs.image_from_bytes(png([hidden, white], "RGBA"))
        opaque = np.full((28, 56, 4), 255, np.uint8)
        with pytest.raises(InputError, match="^the image is blank: every pixel is gray level 255 to 255"):
            inputs.image_from_bytes(png([opaque], "RGBA"))
        opaque_then_clear = png([opaque, hidden], "RGBA")  # one opaque frame: blank, not transparent
        with pytest.raises(InputError, match=r"^the image is blank \(all 2 frames\)"):
            inputs.image_from_bytes(opaque_then_clear)

    def test_larger_images_are_scaled_like_mnist(self, test_seen):
        """A 10x enlarged test image, dark on white, decodes exactly as the drawing of its white-on-black twin."""
        big = np.kron(test_seen.images[5], np.ones((10, 10))).astype(np.uint8)
        np.testing.assert_array_equal(inputs.image_from_bytes(_encode(255 - big)), inputs.image_from_drawing(big))

    def test_image_from_drawing_is_mnist_like(self, test_seen):
        big = np.kron(test_seen.images[5], np.ones((10, 10))).astype(np.uint8)  # a 280 x 560 "drawing"
        img = inputs.image_from_drawing(big)
        assert img.shape == (28, 56) and img.dtype == np.uint8
        for j in range(2):
            cell = img[:, 28 * j: 28 * (j + 1)].astype(float)
            rows, cols = np.flatnonzero(cell.max(1) > 25), np.flatnonzero(cell.max(0) > 25)
            assert max(rows[-1] - rows[0], cols[-1] - cols[0]) + 1 in (19, 20, 21)  # MNIST's 20 px box
            com = [(cell.sum(1) @ np.arange(28)) / cell.sum(), (cell.sum(0) @ np.arange(28)) / cell.sum()]
            np.testing.assert_allclose(com, 13.5, atol=1.0)  # centre of mass at the centre
        rgba = np.zeros((200, 400, 4), np.uint8)
        rgba[40:160, 90:110] = 255  # one stroke in the left half, nothing on the right
        one = inputs.image_from_drawing(rgba)
        assert one[:, :28].max() > 0 and one[:, 28:].max() == 0
        with pytest.raises(InputError, match="empty"):
            inputs.image_from_drawing(np.zeros((200, 400, 4), np.uint8))
        with pytest.raises(InputError, match="shape"):
            inputs.image_from_drawing(np.zeros((2, 2, 2)))

    @pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
    def test_image_from_drawing_refuses_non_finite_pixels(self, bad):
        drawing = np.full((200, 400), bad)  # a NaN background gave an all-black image
        drawing[40:160, 90:110] = 255.0
        with pytest.raises(InputError, match=r"the drawing has 77600 NaN or infinite values; pixels must be finite"):
            inputs.image_from_drawing(drawing)
        rgba = np.zeros((200, 400, 4))
        rgba[40:160, 90:110] = 255.0
        rgba[0, 0, 1] = bad  # one channel of one pixel
        with pytest.raises(InputError, match="has 1 NaN or infinite value;"):
            inputs.image_from_drawing(rgba)
