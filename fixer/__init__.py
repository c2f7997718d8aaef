"""fixer: explain and fix PyTorch device-placement errors.

The Python API, for notebooks and training scripts:

    fixer.audit(model=model, optimizer=optimizer, batch=batch)   # findings, without running anything
    fixer.audit(model=model, loss=criterion, loader=train_loader)
    fixer.install()                                              # explain device errors as they escape
    %load_ext fixer                                              # the same in IPython/Jupyter

Everything heavy is imported on first use, so `import fixer` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fixer.diagnose.findings import Finding

__version__ = "0.1.0"


def audit(
    model: Any = None, optimizer: Any = None, batch: Any = None, loss: Any = None, loader: Any = None
) -> list[Finding]:
    """Read where the objects' tensors really are, without running anything, so a notebook or a
    training script gets an answer about this run rather than a guess from its log: the odd submodule,
    plain attribute, optimizer state, batch or loss weight, and a DataLoader generator the default
    device will refuse. Pass whichever objects you have."""
    from fixer.diagnose.objects import audit as run_audit

    return run_audit(model=model, optimizer=optimizer, batch=batch, loss=loss, loader=loader)


def install() -> None:
    """Explain device-placement errors that escape to the top level; other errors print as usual."""
    from fixer.hook import install as install_hook

    install_hook()


def load_ipython_extension(ipython: Any) -> None:
    from fixer.hook import load_ipython_extension as load

    load(ipython)
