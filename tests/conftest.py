"""Hypothesis profiles: a fast default for CI, a thorough one on request.

    HYPOTHESIS_PROFILE=thorough pytest
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
settings.register_profile("thorough", max_examples=300, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def _torchvision_without_compiled_ops() -> object:
    """Let torchvision's Python code import where its compiled ops cannot load.

    The only torchvision wheel pip finds for a CPU-only torch is built against CUDA torch: its ``_C``
    library does not load, and ``torchvision/_meta_registrations.py`` then fails registering fake kernels
    for ``torchvision::nms`` and ``qnms``, which do not exist. Declaring those two schemas (no kernels) is
    enough for ``import torchvision`` to succeed, and with it timm, vit-pytorch and open_clip, whose model
    code the tests run (none of them calls nms). Where the library loads, nothing is declared.
    """
    import importlib.util
    import pathlib

    import torch

    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        return None
    for library in pathlib.Path(spec.origin).parent.glob("_C*.so"):
        try:
            torch.ops.load_library(str(library))
            return None
        except (OSError, RuntimeError):
            break
    schemas = torch.library.Library("torchvision", "DEF")
    for op in ("nms", "qnms"):
        schemas.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    return schemas


_TORCHVISION_SCHEMAS = _torchvision_without_compiled_ops()  # kept alive: the schemas live as long as it does
