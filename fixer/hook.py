"""An excepthook (and its IPython twin) that explains device-placement errors where they happen.

The original traceback always prints first and unchanged; fixer's explanation follows only when a
KB entry matches, so installing the hook never hides an error.
"""

from __future__ import annotations

import sys
import traceback
from types import TracebackType
from typing import Any


def explain_exception(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> bool:
    """Print fixer's explanation of an exception; True when a KB entry matched."""
    from fixer.explain.match import Matcher
    from fixer.kb.catalog import KBError, load
    from fixer.output import render

    text = "".join(traceback.format_exception(exc_type, exc, tb))
    try:
        result = Matcher(load()).explain(text)
    except KBError:
        return False
    if result.traceback is None or not result.matches:
        return False
    render.console(stderr=True).print(render.explanation(result, top=3))
    return True


def install() -> None:
    previous = sys.excepthook

    def hook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        previous(exc_type, exc, tb)
        explain_exception(exc_type, exc, tb)

    sys.excepthook = hook


def load_ipython_extension(ipython: Any) -> None:
    def handler(
        shell: Any,
        exc_type: type[BaseException],
        exc: BaseException,
        tb: TracebackType | None,
        tb_offset: int | None = None,
    ) -> Any:
        shell.showtraceback((exc_type, exc, tb), tb_offset=tb_offset)
        explain_exception(exc_type, exc, tb)

    ipython.set_custom_exc((RuntimeError, TypeError, ValueError, AssertionError), handler)
