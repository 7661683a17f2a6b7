"""Let torchvision's Python code import where its compiled ops cannot load (a CPU-only torch).

The only torchvision wheel pip finds for a CPU-only torch is built against CUDA torch: its ``_C``
library does not load, and ``torchvision/_meta_registrations.py`` then fails registering fake kernels
for ``torchvision::nms`` and ``qnms``, which do not exist. Declaring those two schemas (no kernels)
is enough for ``import torchvision`` to succeed, and with it timm, vit-pytorch, open_clip and
transformers (which imports torchvision when it is installed); their model code never calls those ops.

``install()`` adds a finder that does this the first time anything imports torchvision (nothing is
imported before that: no cost at start-up). Where the library loads, nothing is declared.
``python tests/support/torchvision_cpu_ops.py`` writes a ``.pth`` file into the environment's
site-packages so that every Python process of the test environment (pytest's workers, the CLI run as
a subprocess, the benchmarks) installs it; the README's test command runs it.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import pathlib
import sys
import sysconfig

_SCHEMAS: list[object] = []  # the torch.library.Library holding the schemas: they live as long as it does


def declare_missing_ops() -> None:
    """Declare ``torchvision::nms`` and ``qnms`` when torchvision's compiled library does not load."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None or _SCHEMAS:
        return
    import torch

    try:
        torch.ops.torchvision.nms  # declared already (by another copy of this module) or loaded
        return
    except (AttributeError, RuntimeError):
        pass
    for library in pathlib.Path(spec.origin).parent.glob("_C*.so"):
        try:
            torch.ops.load_library(str(library))
            return
        except (OSError, RuntimeError):
            break
    schemas = torch.library.Library("torchvision", "DEF")
    for op in ("nms", "qnms"):
        schemas.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _SCHEMAS.append(schemas)


class _BeforeTorchvision(importlib.abc.MetaPathFinder):
    """Runs ``declare_missing_ops`` once, when ``torchvision`` is first imported, then steps aside."""

    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name == "torchvision":
            sys.meta_path.remove(self)
            declare_missing_ops()
        return None


def install() -> None:
    if "torchvision" in sys.modules:
        return
    if not any(isinstance(finder, _BeforeTorchvision) for finder in sys.meta_path):
        sys.meta_path.insert(0, _BeforeTorchvision())


def write_pth() -> pathlib.Path:
    """Make every process of this environment install the finder: this module and a ``.pth`` that imports it."""
    site = pathlib.Path(sysconfig.get_paths()["purelib"])
    (site / "_torchvision_cpu_ops.py").write_text(pathlib.Path(__file__).read_text())
    pth = site / "_torchvision_cpu_ops.pth"
    pth.write_text("import _torchvision_cpu_ops; _torchvision_cpu_ops.install()\n")
    return pth


if __name__ == "__main__":
    print(f"wrote {write_pth()}")
