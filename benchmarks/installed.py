"""The environment a benchmark gives the fixer processes it times: the one an installed fixer runs in."""

from __future__ import annotations

import os


def installed_env(**extra: str) -> dict[str, str]:
    """This process's environment without PYTHONDONTWRITEBYTECODE, plus `extra`.

    pip compiles an installed fixer's bytecode, so users never pay to compile its modules; a sandbox
    that sets the variable would make every timed run compile them again (about 28 ms here).
    """
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env.update(extra)
    return env
