"""Redact a report meant for a public issue: what identifies a person, a machine or an account goes,
what helps a reader (which file of which library, the message, the devices) stays.

A log from a training job carries more than its traceback: `/home/alice/...` and `/mnt/team-x/...`
paths, `alice@gpu-node-7:~$` prompts, an `HF_TOKEN=hf_...` echoed by a launcher, a presigned URL with
its signature. Each rule below removes one of those, from this machine or any other:
- an installed package's file is shown from its package on (`SITE-PACKAGES:/torch/nn/...`), a file of
  Python's own library from there (`PYTHON:/threading.py`), a file under a home folder from there
  (`HOME:/proj/train.py`), and any other absolute path by its file name alone (`.../train.py`);
- this machine's user and host names, `user@host` at the start of a line (a shell prompt) and e-mail
  addresses; host names wherever the text shows one as a host (a prompt, NCCL's `host:pid:tid` prefix,
  `MASTER_ADDR=`, `HOSTNAME=`, SLURM's node lists, a name with a hyphen or digit under a domain, a name
  in an internal domain such as `.internal` or `.corp`), then every other place that name appears;
- IP addresses: private and link-local ones (`10.0.3.17`, `fe80::1`) anywhere, any address with a
  port (`34.1.2.3:29500`) or as a URL's host; loopback stays, as do versions (`cudnn 8.9.2.26`);
- credentials in URLs (`https://user:pass@...`, `?token=...&X-Amz-Signature=...`), values of
  variables and arguments named like secrets (`WANDB_API_KEY=...`, `token="..."`), tokens whose
  shape gives them away (`hf_...`, `ghp_...`, `sk-...`, `AKIA...`, `Bearer ...`, JSON Web Tokens) and
  private key blocks.
URLs are taken out before paths, so a link keeps its path, and its host unless that is an address or a
host found as above; it loses what authenticates.
"""

from __future__ import annotations

import contextlib
import getpass
import ipaddress
import re
import site
import socket
import sysconfig
from collections.abc import Iterable
from pathlib import Path

REDACTED = "REDACTED"

_URL = re.compile(r"""\b[a-z][a-z0-9+.-]*://[^\s"'<>`]+""", re.I)
_URL_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)[^/@\s]+@", re.I)
_SECRET_WORD = r"(?:token|secret|passw(?:or)?d|passwd|key|credentials?|signature|sig|auth)"
_URL_PARAMETER = re.compile(rf"([?&;](?:[\w.-]*{_SECRET_WORD}[\w.-]*|key|code)=)[^&#;\s]*", re.I)
# `NAME=value`, `name: value`, `name="value"` where the name says secret and the value looks like one:
# letters and digits mixed, eight or more; so `tokens = tokenizer(text)` in a code line stays.
_ASSIGNED_SECRET = re.compile(
    rf"""(\b[\w.-]*{_SECRET_WORD}[\w.-]*["']?\]?\s*[=:]\s*["']?)(?=[\w./+=:~-]*\d)(?=[\w./+=:~-]*[A-Za-z])[\w./+=:~-]{{8,}}""",
    re.I,
)
_TOKEN_SHAPES = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|glpat-[\w-]{20,}|sk-[\w-]{20,}"
    r"|xox[abprs]-[\w-]{10,}|AKIA[0-9A-Z]{16}|AIza[\w-]{30,})\b"
)
_BEARER = re.compile(r"\b(Bearer|Basic|token)\s+[A-Za-z0-9._~+/-]{12,}=*", re.I)
_JWT = re.compile(r"\beyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}")
_PRIVATE_KEY = re.compile(
    r"(-----BEGIN [A-Z ]*PRIVATE KEY-----)[A-Za-z0-9+/=\s]{0,100000}(-----END [A-Z ]*PRIVATE KEY-----)"
)
# Where a text names a host: the value of a variable that holds one, NCCL's `host:pid:tid [gpu]` prefix,
# and a dotted name under a domain whose labels a Python name cannot have (a hyphen) or rarely has (a
# digit), or under a domain only private networks use.
_HOST_VARIABLE = re.compile(
    r"\b(?:MASTER_ADDR|HOST(?:NAME)?|\w+_HOST|NODE_?NAME|SLURMD_NODENAME|SLURM_\w*NODELIST|NODELIST)=([^\s,;'\"]+)"
)
_NCCL_PREFIX = re.compile(r"(?<![\w.-])([A-Za-z][\w.-]*):\d+:\d+ \[\d+\] NCCL")
_INTERNAL = r"(?:internal|local|localdomain|lan|corp|intranet|intra|priv|private|cluster|home\.arpa)"
_DOMAIN = (
    r"(?:com|net|org|edu|gov|mil|int|info|biz|cloud|io|ai|dev|app|co|uk|de|fr|nl|ch|se|eu|jp|cn|kr|tw|sg|in|au|ca|us)"
)
_HOST_NAME = re.compile(
    rf"(?<![\w.@/-])(?:[A-Za-z0-9-]+\.)+{_INTERNAL}\b(?![\w-]|\.\w)"
    rf"|(?<![\w.@/-])(?=[\w.-]*[-\d][\w-]*\.)(?:[A-Za-z0-9-]+\.)+{_DOMAIN}\b(?![\w-]|\.\w)",
    re.I,
)
_URL_HOST = re.compile(r"^([a-z][a-z0-9+.-]*://(?:[^/@\s]+@)?)(\[[^\]/]*\]|[^/:?#\s\[\]]+)", re.I)
_INTERNAL_HOST = re.compile(rf"(?:[A-Za-z0-9-]+\.)+{_INTERNAL}", re.I)
_IPV4 = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w.]|\.\d)(:\d{1,5})?")
_IPV6 = re.compile(r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])")
# `alice@gpu-node-3:~/proj$`, `(venv) [alice@host proj]$`: a shell prompt at the start of a line; and
# an e-mail address anywhere. Not `x@W` in a code line, which is a matrix product.
_PROMPT = re.compile(r"^((?:\([\w.-]*\)\s*)?\[?)[\w.-]+@[\w.-]+(?=[:\s\]#$])", re.M)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
# Absolute paths, POSIX and Windows, in quotes or not.
_SEGMENT = r"""[^\s"'<>|\\/:*?]+"""
_PATH = re.compile(
    rf"""(?<![\w.~/\\:-])(?:[A-Za-z]:[\\/](?:{_SEGMENT}[\\/])*|/(?:{_SEGMENT}/)+)[^\s"'<>|\\/:*?,;)\]]+"""
)
# A Windows user folder may hold a space (`C:\Users\Chris Olin\...`), where a path is otherwise cut.
# Its name is put aside first, so the path is read whole: from its packages or its home on, as any other.
_WINDOWS_HOME = re.compile(r"(?<![\w.~/\\:-])([A-Za-z]:[\\/]Users[\\/])[^\\/\"'\n<>|:*?]+(?=[\\/])")
_PACKAGES = re.compile(r"[\\/](?:site|dist)-packages[\\/]")
_STDLIB = re.compile(r"[\\/]lib[\\/]python\d(?:\.\d+)?[\\/]|[\\/](?-i:Lib)[\\/](?!site-packages)", re.I)
_HOMES = re.compile(r"^(?:/home/[^/]+|/Users/[^/]+|/root|[A-Za-z]:[\\/]Users[\\/][^\\/]+)(?=[\\/]|$)")


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
    names = (*(_this_machine() if names is None else names), *hosts_in(text))
    pieces: list[str] = []
    at = 0
    for url in _URL.finditer(text):
        pieces.append(_outside_urls(text[at : url.start()], home, dirs))
        pieces.append(_url(url.group(0)))
        at = url.end()
    pieces.append(_outside_urls(text[at:], home, dirs))
    redacted = "".join(pieces)
    for name in sorted({n for n in names if len(n) >= 3 and n.lower() not in _TOO_COMMON}, key=len, reverse=True):
        redacted = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", "USER-OR-HOST", redacted, flags=re.I)
    return redacted


def hosts_in(text: str) -> set[str]:
    """The host names the text shows as hosts, each with its first label (`gpu-node-17` of
    `gpu-node-17.corp.example.com`), which the rest of a log uses alone."""
    found = {m.group(1) for m in _HOST_VARIABLE.finditer(text) if not _is_address(m.group(1))}
    found.update(m.group(1) for m in _NCCL_PREFIX.finditer(text))
    found.update(m.group(0) for m in _HOST_NAME.finditer(text))
    found.update(m.group(0).split("@", 1)[1].rstrip(":]#$ ") for m in _PROMPT.finditer(text) if "@" in m.group(0))
    return found | {name.split(".", 1)[0] for name in found if "." in name}


def _is_address(text: str) -> bool:
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(text)
        return True
    return False


def redact_data(data: object, **options: object) -> object:
    """The same, on every string of a JSON-like value: text is redacted before it is escaped, and a host
    found in one string goes from all of them."""
    if "names" not in options:
        options["names"] = (*_this_machine(), *hosts_in("\n".join(_strings(data))))
    if isinstance(data, str):
        return redact(data, **options)  # type: ignore[arg-type]
    if isinstance(data, dict):
        return {key: redact_data(value, **options) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [redact_data(value, **options) for value in data]
    return data


def _strings(data: object) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for value in data.values() for s in _strings(value)]
    if isinstance(data, list | tuple):
        return [s for value in data for s in _strings(value)]
    return []


def _url(url: str) -> str:
    url = _URL_USERINFO.sub(rf"\g<1>{REDACTED}@", url)
    url = _URL_PARAMETER.sub(rf"\g<1>{REDACTED}", url)
    url = _TOKEN_SHAPES.sub(REDACTED, url)
    return _URL_HOST.sub(lambda found: found.group(1) + _url_host(found.group(2)), url)


def _url_host(host: str) -> str:
    """A public site stays (github.com is what a reader follows); an address or a private network's name goes."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return "HOST" if _INTERNAL_HOST.fullmatch(host) else host
    return host if address.is_loopback else "HOST"


def _outside_urls(text: str, home: str, dirs: tuple[str, ...]) -> str:
    text = _PRIVATE_KEY.sub(rf"\g<1>{REDACTED}\g<2>", text)
    text = _JWT.sub(REDACTED, text)
    text = _TOKEN_SHAPES.sub(REDACTED, text)
    text = _BEARER.sub(rf"\g<1> {REDACTED}", text)
    text = _ASSIGNED_SECRET.sub(rf"\g<1>{REDACTED}", text)
    text = _WINDOWS_HOME.sub(r"\g<1>USER", text)
    text = _PATH.sub(lambda found: _path(found.group(0), home, dirs), text)
    text = _EMAIL.sub("USER@HOST", text)
    text = _PROMPT.sub(r"\g<1>USER@HOST", text)
    text = _HOST_VARIABLE.sub(lambda found: found.group(0).replace(found.group(1), "HOST"), text)
    return _addresses(_HOST_NAME.sub("HOST", text))


def _addresses(text: str) -> str:
    text = _IPV4.sub(lambda found: _ipv4(found.group(1), found.group(2)), text)
    return _IPV6.sub(lambda found: _ipv6(found.group(0)), text)


def _ipv4(address: str, port: str | None) -> str:
    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        return address + (port or "")
    if ip.is_loopback or ip.is_unspecified or not (port or ip.is_private or ip.is_link_local or ip.is_reserved):
        return address + (port or "")
    return "IP-ADDRESS" + (port or "")


def _ipv6(text: str) -> str:
    """`fe80::1ff:fe23:4567:890a`, not `c10::Error` (no hex) nor `::1` (loopback)."""
    try:
        ip = ipaddress.IPv6Address(text)
    except ValueError:
        return text
    groups = [g for g in text.split(":") if g]
    if ip.is_loopback or ip.is_unspecified or not (len(groups) >= 3 or ip.is_private or ip.is_link_local):
        return text
    return "IP-ADDRESS"


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
