"""Redact a report meant for a public issue: what identifies a person, a machine or an account goes,
what helps a reader (which file of which library, the message, the devices) stays.

A log from a training job carries more than its traceback: `/home/alice/...` and `/mnt/team-x/...`
paths, `alice@gpu-node-7:~$` prompts, an `HF_TOKEN=hf_...` echoed by a launcher, a presigned URL with
its signature. Each rule below removes one of those, from this machine or any other:
- an installed package's file is shown from its package on (`SITE-PACKAGES:/torch/nn/...`), a file of
  Python's own library from there (`PYTHON:/threading.py`), a file under a home folder from there
  (`HOME:/proj/train.py`), and any other absolute path by its file name alone (`.../train.py`);
- this machine's user and host names, `user@host` at the start of a line (a shell prompt) and e-mail
  addresses;
- credentials in URLs (`https://user:pass@...`, `?token=...&X-Amz-Signature=...`), values of
  variables and arguments named like secrets (`WANDB_API_KEY=...`, `token="..."`), and tokens whose
  shape gives them away (`hf_...`, `ghp_...`, `sk-...`, `AKIA...`, `Bearer ...`).
URLs are taken out before paths, so a link keeps its host and path; it loses only what authenticates.
"""

from __future__ import annotations

import contextlib
import getpass
import re
import site
import socket
import sysconfig
from collections.abc import Iterable
from pathlib import Path

REDACTED = "REDACTED"

_URL = re.compile(r"""\b[a-z][a-z0-9+.-]*://[^\s"'<>`]+""", re.I)
_URL_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)[^/@\s]+@", re.I)
_SECRET_WORD = (
    r"(?:token|secret|passw(?:or)?d|passwd|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|signature|sig|auth)"
)
_URL_PARAMETER = re.compile(rf"([?&;](?:[\w.-]*{_SECRET_WORD}[\w.-]*|key|code)=)[^&#;\s]*", re.I)
# `NAME=value`, `name: value`, `name="value"` where the name says secret and the value looks like one:
# letters and digits mixed, eight or more; so `tokens = tokenizer(text)` in a code line stays.
_ASSIGNED_SECRET = re.compile(
    rf"""(\b[\w.-]*{_SECRET_WORD}[\w.-]*["']?\s*[=:]\s*["']?)(?=[\w./+=:~-]*\d)(?=[\w./+=:~-]*[A-Za-z])[\w./+=:~-]{{8,}}""",
    re.I,
)
_TOKEN_SHAPES = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|glpat-[\w-]{20,}|sk-[\w-]{20,}"
    r"|xox[abprs]-[\w-]{10,}|AKIA[0-9A-Z]{16}|AIza[\w-]{30,})\b"
)
_BEARER = re.compile(r"\b(Bearer|Basic|token)\s+[A-Za-z0-9._~+/-]{12,}=*", re.I)
# `alice@gpu-node-3:~/proj$`, `(venv) [alice@host proj]$`: a shell prompt at the start of a line; and
# an e-mail address anywhere. Not `x@W` in a code line, which is a matrix product.
_PROMPT = re.compile(r"^((?:\([\w.-]*\)\s*)?\[?)[\w.-]+@[\w.-]+(?=[:\s\]#$])", re.M)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
# Absolute paths, POSIX and Windows, in quotes or not.
_SEGMENT = r"""[^\s"'<>|\\/:*?]+"""
_PATH = re.compile(
    rf"""(?<![\w.~/\\:-])(?:[A-Za-z]:[\\/](?:{_SEGMENT}[\\/])*|/(?:{_SEGMENT}/)+)[^\s"'<>|\\/:*?,;)\]]+"""
)
_PACKAGES = re.compile(r"[\\/](?:site|dist)-packages[\\/]")
_STDLIB = re.compile(r"[\\/]lib[\\/]python\d(?:\.\d+)?[\\/]|[\\/]Lib[\\/](?!site-packages)", re.I)
_HOMES = re.compile(r"^(?:/home/[^/]+|/Users/[^/]+|/root|[A-Za-z]:[\\/]Users[\\/][^\\/]+)(?=[\\/])")


def redact(
    text: str,
    home: str | None = None,
    package_dirs: tuple[str, ...] | None = None,
    names: Iterable[str] | None = None,
) -> str:
    """`text` without what identifies a person, a machine or an account. `home`, `package_dirs` and
    `names` (user and host) are this machine's by default: a report made here names them most."""
    home = str(Path.home()) if home is None else home
    dirs = _package_dirs() if package_dirs is None else package_dirs
    names = _this_machine() if names is None else names
    pieces: list[str] = []
    at = 0
    for url in _URL.finditer(text):
        pieces.append(_outside_urls(text[at : url.start()], home, dirs))
        pieces.append(_url(url.group(0)))
        at = url.end()
    pieces.append(_outside_urls(text[at:], home, dirs))
    redacted = "".join(pieces)
    for name in sorted({n for n in names if len(n) >= 3}, key=len, reverse=True):
        redacted = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", "USER-OR-HOST", redacted)
    return redacted


def redact_data(data: object, **options: object) -> object:
    """The same, on every string of a JSON-like value: text is redacted before it is escaped."""
    if isinstance(data, str):
        return redact(data, **options)  # type: ignore[arg-type]
    if isinstance(data, dict):
        return {key: redact_data(value, **options) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [redact_data(value, **options) for value in data]
    return data


def _url(url: str) -> str:
    url = _URL_USERINFO.sub(rf"\g<1>{REDACTED}@", url)
    url = _URL_PARAMETER.sub(rf"\g<1>{REDACTED}", url)
    return _TOKEN_SHAPES.sub(REDACTED, url)


def _outside_urls(text: str, home: str, dirs: tuple[str, ...]) -> str:
    text = _TOKEN_SHAPES.sub(REDACTED, text)
    text = _BEARER.sub(rf"\g<1> {REDACTED}", text)
    text = _ASSIGNED_SECRET.sub(rf"\g<1>{REDACTED}", text)
    text = _PATH.sub(lambda found: _path(found.group(0), home, dirs), text)
    text = _EMAIL.sub("USER@HOST", text)
    return _PROMPT.sub(r"\g<1>USER@HOST", text)


def _path(path: str, home: str, dirs: tuple[str, ...]) -> str:
    for folder in sorted(dirs, key=len, reverse=True):
        if folder and path.startswith(folder):
            return "SITE-PACKAGES:" + path[len(folder) :]
    packages = _PACKAGES.search(path)
    if packages:
        return "SITE-PACKAGES:" + path[packages.end() - 1 :]
    stdlib = _STDLIB.search(path)
    if stdlib:
        return "PYTHON:" + path[stdlib.end() - 1 :]
    if len(home) > 1 and (path == home or path.startswith((home + "/", home + "\\"))):
        return "HOME:" + path[len(home) :]
    other_home = _HOMES.match(path)
    if other_home:
        return "HOME:" + path[other_home.end() :]
    name = re.split(r"[\\/]", path)[-1]
    return ".../" + name if name else "..."


def _package_dirs() -> tuple[str, ...]:
    found = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], site.getusersitepackages()}
    found.update(site.getsitepackages())
    return tuple(sorted(found))


def _this_machine() -> tuple[str, ...]:
    names = []
    with contextlib.suppress(KeyError, OSError):  # no user name for this uid (a container)
        names.append(getpass.getuser())
    try:
        host = socket.gethostname()
        names += [host, host.split(".")[0]]
    except OSError:
        pass
    return tuple(n for n in names if n and n not in _TOO_COMMON)


# A user or host with one of these names would redact ordinary words of every report.
_TOO_COMMON = frozenset({"root", "user", "admin", "localhost", "ubuntu", "runner", "jovyan", "torch", "python"})
