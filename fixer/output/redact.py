"""Redact the paths in a report meant for a public issue: the home folder and installed packages.

A traceback pasted into an issue shows a user name (`/home/alice/...`) and the layout of the
machine; what helps a reader is only which file of which library. `HOME:` and `SITE-PACKAGES:`
keep that and drop the rest.
"""

from __future__ import annotations

import re
import site
import sysconfig
from pathlib import Path

# Any installed-packages folder, also one from another machine or another interpreter.
_PACKAGES = re.compile(r"""(?:[A-Za-z]:)?[^\s"'<>|]*?[\\/](?:site|dist)-packages(?=[\\/])""")


def redact(text: str, home: str | None = None, package_dirs: tuple[str, ...] | None = None) -> str:
    dirs = _package_dirs() if package_dirs is None else package_dirs
    for folder in sorted(dirs, key=len, reverse=True):
        text = text.replace(folder, "SITE-PACKAGES:")
    text = _PACKAGES.sub("SITE-PACKAGES:", text)
    home = str(Path.home()) if home is None else home
    if len(home) > 1:  # a home of "/" would redact every path
        text = re.sub(rf"{re.escape(home)}(?=[\\/]|\b)", "HOME:", text)
    return text


def _package_dirs() -> tuple[str, ...]:
    found = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], site.getusersitepackages()}
    found.update(site.getsitepackages())
    return tuple(sorted(found))
