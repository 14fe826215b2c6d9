"""Tests of hedgekit.papers.url.code_hash: the module closure of a fake package's relative, absolute and lazy
imports, and its ``skip``. The code key built on it: tests/papers/url/test_benchmark.py."""
from hedgekit.papers.url import code_hash


def test_closure_resolves_relative_absolute_and_lazy_imports(tmp_path, monkeypatch):
    import sys

    pkg = tmp_path / "hk_fake_closure"
    (pkg / "deep").mkdir(parents=True)
    files = {"__init__.py": "", "deep/__init__.py": "", "deep/leaf.py": "Y = 1\n", "other.py": "Z = 1\n",
             "shared.py": "import numpy\nX = 1\n", "util.py": "from hk_fake_closure.shared import X\n",
             "method.py": "import os\nfrom . import shared\nimport hk_fake_closure.util\n\n\ndef f():\n"
                          "    from .deep.leaf import Y\n    return Y\n"}
    for name, text in files.items():
        (pkg / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        closure = code_hash.module_closure(["hk_fake_closure.method"], package="hk_fake_closure")
    finally:
        for name in [m for m in sys.modules if m.startswith("hk_fake_closure")]:
            del sys.modules[name]
    assert closure == {f"hk_fake_closure.{m}": str(pkg / f"{m.replace('.', '/')}.py")
                       for m in ("deep.leaf", "method", "shared", "util")}
    assert code_hash.module_closure(["hk_fake_closure.method"], package="hk_fake_closure",
                                    skip={"hk_fake_closure.util"}).keys() == {f"hk_fake_closure.{m}" for m in
                                                                               ("deep.leaf", "method", "shared")}
