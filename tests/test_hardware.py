"""Tests of hedgekit.hardware: CPU flags read from hand-written cpuinfo files, the bfloat16 decision, the fallback."""
import warnings

import pytest
import torch

from hedgekit import hardware, zoo
from hedgekit.hardware import ieee_float32

X86_NATIVE = "processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16\n"
X86_AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx2\n"
ARM = "processor\t: 0\nFeatures\t: fp asimd bf16\n"


@pytest.fixture(autouse=True)
def _no_override(monkeypatch):
    monkeypatch.delenv("HEDGEKIT_NATIVE_BF16", raising=False)


def _info(tmp_path, text):
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text,flags", [
    (X86_NATIVE, {"fpu", "sse2", "avx2", "avx512f", "avx512_bf16"}),
    (X86_AVX2, {"fpu", "sse2", "avx2"}),
    (ARM, {"fp", "asimd", "bf16"}),
    ("processor\t: 0\n", set()),
])
def test_cpu_flags_are_read_from_the_flags_or_features_line(tmp_path, text, flags):
    assert hardware.cpu_flags(_info(tmp_path, text)) == flags


def test_missing_cpuinfo_gives_no_flags(tmp_path):
    assert hardware.cpu_flags(tmp_path / "absent") == frozenset()


@pytest.mark.parametrize("text,native", [(X86_NATIVE, True), (X86_AVX2, False), (ARM, False),
                                         ("flags : avx2 amx_tile amx_bf16\n", True), ("", False)])
def test_native_bfloat16_on_cpu_needs_avx512_bf16_or_amx(tmp_path, text, native):
    assert hardware.native_bfloat16("cpu", _info(tmp_path, text)) is native


def test_environment_variable_overrides_the_detection(tmp_path, monkeypatch):
    monkeypatch.setenv("HEDGEKIT_NATIVE_BF16", "1")
    assert hardware.native_bfloat16("cpu", _info(tmp_path, X86_AVX2))
    monkeypatch.setenv("HEDGEKIT_NATIVE_BF16", "0")
    assert not hardware.native_bfloat16("cpu", _info(tmp_path, X86_NATIVE))


def test_cpu_summary_marks_present_and_absent_flags(tmp_path):
    line = hardware.cpu_summary(_info(tmp_path, X86_AVX2))
    assert "+avx2" in line and "-avx512_bf16" in line and "bfloat16 emulated" in line
    assert "bfloat16 native" in hardware.cpu_summary(_info(tmp_path, X86_NATIVE))


def test_bfloat16_falls_back_to_float32_with_one_warning_where_emulated(monkeypatch):
    monkeypatch.setenv("HEDGEKIT_NATIVE_BF16", "0")
    with pytest.warns(UserWarning, match="emulated.*float32") as caught:
        assert hardware.resolve_precision("bfloat16") == "float32"
    assert len(caught) == 1
    monkeypatch.setenv("HEDGEKIT_NATIVE_BF16", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hardware.resolve_precision("bfloat16") == "bfloat16"
        assert hardware.resolve_precision("float32") == "float32"


def test_train_spec_records_the_precision_it_trained_in(monkeypatch):
    """Asked for bfloat16 where it is emulated, the trainer gets (and the checkpoint records) float32."""
    from hedgekit.zoo.recipes import trainer_config

    seen = {}

    def trainer(spec, precision, progress, device, callback):  # a recipe builds its config from what it is given
        seen["precision"] = trainer_config(spec, precision).precision
        raise RuntimeError("stop before training")

    monkeypatch.setitem(zoo.TRAINERS, "pairs", trainer)
    monkeypatch.setenv("HEDGEKIT_NATIVE_BF16", "0")
    with pytest.warns(UserWarning, match="emulated"), pytest.raises(RuntimeError, match="stop"):
        zoo.train_spec(zoo.Spec(kind="hib", preset="fast"), precision="bfloat16")
    assert seen["precision"] == "float32"
    monkeypatch.setenv("HEDGEKIT_NATIVE_BF16", "1")
    with pytest.raises(RuntimeError, match="stop"):
        zoo.train_spec(zoo.Spec(kind="hib", preset="fast"), precision="bfloat16")
    assert seen["precision"] == "bfloat16"


def test_cpu_summary_says_when_the_environment_decided(tmp_path, monkeypatch):
    monkeypatch.setenv("HEDGEKIT_NATIVE_BF16", "0")
    assert "emulated (slower than float32) (set by HEDGEKIT_NATIVE_BF16)" in hardware.cpu_summary(_info(tmp_path, X86_NATIVE))


def test_device_description_names_the_cuda_card_and_index(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index: f"Card {index}")
    assert hardware.device_description("cuda") == "cuda:0 (Card 0)"  # a bare "cuda": the current device
    assert hardware.device_description(torch.device("cuda:1")) == "cuda:1 (Card 1)"
    assert hardware.device_description("cpu") == "cpu" and hardware.device_description("mps") == "mps"


def _precision():
    conv, mm = getattr(torch.backends.cudnn, "conv", None), torch.backends.cuda.matmul
    if conv is not None and hasattr(mm, "fp32_precision"):
        return conv.fp32_precision, mm.fp32_precision
    return torch.backends.cudnn.allow_tf32, mm.allow_tf32


@pytest.mark.parametrize("user", ["default", "tf32 matmuls"])
def test_ieee_float32_turns_tf32_off_on_cuda_only_and_restores_the_settings(user):
    """cuDNN convolutions default to TF32 on recent GPUs; Table 1's embedding (`embed_set`) and the bench's
    matmul ceiling turn it off, for CUDA only, and leave the user's settings as they were (the flags can be set
    without a GPU)."""
    mm = torch.backends.cuda.matmul
    new_api = hasattr(mm, "fp32_precision")
    saved = _precision()
    try:
        if user == "tf32 matmuls":
            setattr(mm, *(("fp32_precision", "tf32") if new_api else ("allow_tf32", True)))
        before = _precision()
        with ieee_float32(torch.device("cpu")):
            assert _precision() == before
        with ieee_float32(torch.device("cuda")):
            assert _precision() == (("ieee", "ieee") if new_api else (False, False))
        assert _precision() == before
        with pytest.raises(RuntimeError), ieee_float32(torch.device("cuda")):  # restored on an error too
            raise RuntimeError("boom")
        assert _precision() == before
    finally:
        conv = getattr(torch.backends.cudnn, "conv", None)
        if new_api and conv is not None:
            conv.fp32_precision, mm.fp32_precision = saved
        else:
            torch.backends.cudnn.allow_tf32, mm.allow_tf32 = saved


def test_a_step_is_launch_bound_on_gpus_and_everywhere_inside_as_launch_bound():
    from hedgekit.hardware import as_launch_bound, launch_bound

    assert not launch_bound("cpu") and launch_bound("cuda") and launch_bound(torch.device("cuda", 1))
    assert launch_bound("mps")
    with as_launch_bound():
        assert launch_bound("cpu")
    assert not launch_bound("cpu")  # restored on exit
    with pytest.raises(ValueError), as_launch_bound():
        raise ValueError
    assert not launch_bound("cpu")  # also after an error
