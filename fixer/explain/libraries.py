"""Which library a traceback frame belongs to, from its path alone.

Frames outside every library are the user's own code: those are the lines worth showing and, later,
patching. Sentry calls this split in-app vs. library frames.
"""

from __future__ import annotations

import re

# Packages whose frames say something about the cause; anything else under site-packages is still a
# library frame, reported under its top-level package name.
_INSTALL_ROOT = re.compile(r"(?:site|dist)-packages/([A-Za-z_][\w]*)")
_TORCH_SOURCE = re.compile(r"(?:^|/)torch/((?:_[a-z]+|[a-z]+)[\w]*)/")
_TORCH_SUBPACKAGES = frozenset(
    {
        "optim",
        "export",
        "_export",
        "_dynamo",
        "_inductor",
        "_subclasses",
        "jit",
        "distributed",
        "fx",
        "cuda",
        "amp",
        "serialization",
        "utils",
        "nn",
    }
)
# A PyTorch source checkout (frames like `/home/me/pytorch/torch/nn/modules/module.py`): only trusted
# when a known subpackage or module follows, so a user's own folder named `torch` stays user code.
_TORCH_CHECKOUT = re.compile(
    r"(?:^|/)(torch)/(?:(?:nn|optim|_dynamo|_subclasses|export|_export|utils|distributed|cuda|fx|jit)/"
    r"|(?:functional|serialization|_tensor|_ops|__init__)\.py$)"
)
_STDLIB = re.compile(r"/lib/python\d(?:\.\d+)?/(?!site-packages|dist-packages)")


def normalise_path(path: str) -> str:
    """Forward slashes, so one regex serves Linux, macOS and Windows tracebacks."""
    return path.replace("\\", "/")


def file_name(path: str) -> str:
    """The file's own name, from a Linux, macOS or Windows path."""
    return normalise_path(path).rsplit("/", 1)[-1]


def library_of(path: str) -> str | None:
    """The top-level package a frame's file belongs to, or None for user code.

    torch frames are refined to their subpackage (`torch.optim`, `torch.export`, ...) because the
    subpackage alone often names the cause.
    """
    norm = normalise_path(path)
    installed = _INSTALL_ROOT.search(norm)
    if installed:
        root = installed.group(1)
        if root == "torch":
            return _torch_area(norm[installed.start(1) :])
        return root
    if _STDLIB.search(norm):
        return "python"
    checkout = _TORCH_CHECKOUT.search(norm)
    if checkout:
        return _torch_area(norm[checkout.start(1) :])
    return None


def _torch_area(path_from_torch: str) -> str:
    sub = _TORCH_SOURCE.match(path_from_torch)
    if sub and sub.group(1) in _TORCH_SUBPACKAGES:
        return f"torch.{sub.group(1)}"
    if path_from_torch.startswith("torch/serialization.py"):
        return "torch.serialization"
    return "torch"
