"""Python's cyclic garbage collector, held off while fixer builds many objects that all stay alive.

Reading a KB makes objects by the hundred thousand (validated entries, an index's decoded lines), and
none of them is garbage. The collector does not know that: it runs a full collection each time the
objects that survived grow by a quarter, walking every object made so far, so its cost grows with the
square of the KB. Measured on a 10,000-entry KB: decoding the 6,315 index lines one paste needs took
3.15 s with it and 0.83 s without, and building the index from loaded entries 15.0 s and 6.2 s. Held
off for one such stretch, the collector runs again afterwards and finds in one pass whatever cycles the
stretch left; a process that runs fixer inside it (the IPython extension, `fixer.install()`) keeps its
own setting.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block, then as it was: nested blocks leave it off until the outermost
    ends, and a collector the caller had turned off stays off."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


__all__ = ["paused"]
