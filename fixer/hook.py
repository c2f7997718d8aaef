"""An excepthook (and its IPython twin) that explains device-placement errors where they happen.

The original traceback always prints first and unchanged; fixer's explanation follows only when a
KB entry matches, so installing the hook never hides an error. The error was raised in this very
process, so what the process knows ranks the causes too: the libraries it can import and the devices
it has (an accelerate cause is no cause where accelerate is not installed). Errors that end a thread
are explained like those that end the program, and installing twice explains once.
"""

from __future__ import annotations

import sys
import threading
import traceback
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fixer.diagnose.findings import Finding

_INSTALLED = "__fixer_hook__"  # marks the hooks fixer set, so a second install() leaves them be


def explain_exception(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> bool:
    """Print fixer's explanation of an exception; True when a KB entry matched."""
    from fixer.diagnose.in_process import explained
    from fixer.explain.match import Matcher
    from fixer.explain.project import current, launched
    from fixer.kb.catalog import KBError, load
    from fixer.output import render

    text = "".join(traceback.format_exception(exc_type, exc, tb))
    try:
        catalog = load()
    except KBError:
        return False
    result = explained(
        Matcher(catalog, project=current(), command=launched()), text, [*live_findings(exc), *_machine(text)], catalog
    )
    if result.traceback is None or not result.matches:
        return False
    render.console(stderr=True).print(render.explanation(result, top=3))
    return True


def live_findings(exc: BaseException) -> list[Finding]:
    """What the objects in the failing frames show, read while the traceback keeps them alive: the same
    probes `fixer run` runs after a failure."""
    try:
        from fixer.diagnose.live import probe_failure

        return probe_failure(exc)
    except Exception:  # the explanation goes on without them
        return []


def _machine(text: str) -> list[Finding]:
    """This process's facts; none when reading them fails, since the error being explained must still be."""
    from fixer.diagnose.in_process import machine_findings

    try:
        return machine_findings(text)
    except Exception:
        return []


def install() -> None:
    if not getattr(sys.excepthook, _INSTALLED, False):
        previous = sys.excepthook

        def hook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
            previous(exc_type, exc, tb)
            explain_exception(exc_type, exc, tb)

        setattr(hook, _INSTALLED, True)
        sys.excepthook = hook
    if not getattr(threading.excepthook, _INSTALLED, False):
        previous_thread = threading.excepthook

        def thread_hook(args: threading.ExceptHookArgs) -> None:
            previous_thread(args)
            if args.exc_value is not None:
                explain_exception(args.exc_type, args.exc_value, args.exc_traceback)

        setattr(thread_hook, _INSTALLED, True)
        threading.excepthook = thread_hook


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
