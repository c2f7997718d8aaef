"""fixer: explain and fix PyTorch device-placement errors.

The Python API, for notebooks and training scripts:

    fixer.audit(model=model, optimizer=optimizer, batch=batch)   # findings, without running anything
    fixer.install()                                              # explain device errors as they escape
    %load_ext fixer                                              # the same in IPython/Jupyter

Everything heavy is imported on first use, so `import fixer` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fixer.diagnose.findings import Finding

__version__ = "0.1.0"


def audit(model: Any = None, optimizer: Any = None, batch: Any = None) -> list[Finding]:
    """Check where a model's parameters and buffers, its optimizer state and a batch live."""
    from fixer.diagnose.objects import audit as run_audit

    return run_audit(model=model, optimizer=optimizer, batch=batch)


def install() -> None:
    """Explain device-placement errors that escape to the top level; other errors print as usual."""
    from fixer.hook import install as install_hook

    install_hook()


def load_ipython_extension(ipython: Any) -> None:
    from fixer.hook import load_ipython_extension as load

    load(ipython)
