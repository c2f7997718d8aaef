"""Which PyTorch the user's project runs on: the range it declares, the version its lock pins, the one
installed here; and whether a patch's rewrite exists in all of them.

A codemod that writes a newer API (`torch.export.passes.move_to_device_pass` appeared in 2.5) into a
project that declares `torch~=2.3.1` breaks its import on every machine that honours the declaration,
even when the torch installed here has the API. So the declaration is read from the project's own
files, statically (a `setup.py` is read as text, never run): pyproject.toml (PEP 621 and Poetry),
setup.cfg, setup.py, requirements*.txt, environment.yml, and the pins of poetry.lock, uv.lock,
Pipfile.lock and pixi/conda lock files. The nearest folder above the patched file that holds any of
them is the project. Versions are compared by `packaging`, as pip compares them.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from fixer.patching.needs import Need

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before it joined the standard library
    import tomli as tomllib

_NAMES = frozenset({"torch", "pytorch"})  # pytorch: the conda package's name
_PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "environment.yml", "environment.yaml")
_LOCKS = ("poetry.lock", "uv.lock", "pdm.lock", "Pipfile.lock", "pixi.lock", "conda-lock.yml")
_QUOTED = re.compile(r"""["']((?:py)?torch\b[^"'\n]*)["']""")  # a requirement in setup.py's strings
_CONDA_PIN = re.compile(r"^\s*-\s*(?:[\w-]+::)?pytorch\s*(=?=?)\s*([\w.*]+)", re.M)
# Every release series of torch, to ask whether a declared range admits one older than a need.
_SERIES = [Version(f"1.{minor}.0") for minor in range(14)] + [Version(f"2.{minor}.0") for minor in range(14)]


@dataclass(frozen=True)
class Declared:
    """The project's torch requirement as written, and the file it is written in."""

    spec: SpecifierSet
    written: str
    file: Path

    def admits_before(self, version: Version) -> bool:
        """Whether some torch release older than `version` meets the requirement."""
        mentioned = [Version(s.version.rstrip(".*")) for s in self.spec if _parses(s.version.rstrip(".*"))]
        candidates = [v for v in (*_SERIES, *mentioned) if v < version]
        return any(self.spec.contains(v, prereleases=True) for v in candidates)


def unmet(need: Need, near: Path) -> str | None:
    """Why the rewrite may not run for this project, in one line; None when every torch it declares,
    pins and has installed is new enough (or it declares none and the installed one is)."""
    since = Version(need.since)
    reasons = [
        f"{found.file.name} declares {found.written}, which allows releases before {need.since}"
        for found in declared(near.parent if near.is_file() else near)
        if found.admits_before(since)
    ]
    here = installed()
    if here is not None and _parses(here) and Version(here).release < since.release:
        reasons.append(f"torch {here} is installed here")
    if not reasons:
        return None
    return f"needs {need.text}, but " + " and ".join(reasons)


def installed() -> str | None:
    """The installed torch's version, from its metadata: nothing is imported."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def declared(start: Path) -> list[Declared]:
    """Every torch requirement of the nearest folder at or above `start` that holds a project file."""
    for folder in (start, *start.parents):
        files = [folder / name for name in (*_PROJECT_FILES, *_LOCKS) if (folder / name).is_file()]
        files += sorted(folder.glob("requirements*.txt"))
        if files:
            return [found for file in files for found in _read(file)]
    return []


def _read(file: Path) -> list[Declared]:
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [Declared(spec, written, file) for spec, written in _requirements(file.name, text)]


def _requirements(name: str, text: str) -> list[tuple[SpecifierSet, str]]:
    if name == "pyproject.toml":
        return _pyproject(text)
    if name in ("poetry.lock", "uv.lock", "pdm.lock"):
        return _toml_lock(text)
    if name == "Pipfile.lock":
        return _pipfile_lock(text)
    if name.endswith((".yml", ".yaml", "pixi.lock")):
        return _conda(text)
    if name == "setup.py":
        return [found for match in _QUOTED.finditer(text) for found in _pep508(match.group(1))]
    return _lines(text)


def _pyproject(text: str) -> list[tuple[SpecifierSet, str]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    project = data.get("project", {})
    lines = [*project.get("dependencies", [])]
    for extra in project.get("optional-dependencies", {}).values():
        lines += extra
    found = [parsed for line in lines if isinstance(line, str) for parsed in _pep508(line)]
    poetry = data.get("tool", {}).get("poetry", {})
    for table in (poetry.get("dependencies", {}), *poetry.get("group", {}).values()):
        deps = table.get("dependencies", table) if isinstance(table, dict) else {}
        value = deps.get("torch") if isinstance(deps, dict) else None
        if isinstance(value, dict):
            value = value.get("version")
        if isinstance(value, str) and (spec := _poetry(value)) is not None:
            found.append((spec, f"torch {value}"))
    return found


def _pep508(line: str) -> list[tuple[SpecifierSet, str]]:
    if not line:
        return []
    try:
        requirement = Requirement(line)
    except InvalidRequirement:
        return []
    if requirement.name.lower() not in _NAMES or not requirement.specifier:
        return []
    return [(requirement.specifier, f"torch{requirement.specifier}")]


def _lines(text: str) -> list[tuple[SpecifierSet, str]]:
    """requirements.txt or setup.cfg: one PEP 508 requirement a line, comments and pip options aside."""
    found = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].split(" --", 1)[0].strip().lstrip("-").strip()
        found += _pep508(line)
    return found


def _poetry(value: str) -> SpecifierSet | None:
    """Poetry's `^2.3` / `~2.3.1` / `2.3.*` / `>=2.1,<3`, as PEP 440 specifiers."""
    value = value.strip()
    if value.startswith(("^", "~")) and not value.startswith("~="):
        parts = value[1:].strip().split(".")
        if not all(p.isdigit() for p in parts):
            return None
        numbers = [int(p) for p in parts]
        if value[0] == "^":
            first = next((i for i, n in enumerate(numbers) if n), len(numbers) - 1)
            upper = [*numbers[:first], numbers[first] + 1]
        else:
            upper = [numbers[0], numbers[1] + 1] if len(numbers) > 1 else [numbers[0] + 1]
        return _specifier(f">={value[1:].strip()},<{'.'.join(map(str, upper))}")
    return _specifier(value if value[:1] in "<>=!~" else f"=={value}")


def _toml_lock(text: str) -> list[tuple[SpecifierSet, str]]:
    try:
        packages = tomllib.loads(text).get("package", [])
    except tomllib.TOMLDecodeError:
        return []
    return [
        (spec, f"torch=={package['version']} (locked)")
        for package in packages
        if isinstance(package, dict) and str(package.get("name", "")).lower() in _NAMES and "version" in package
        if (spec := _specifier(f"=={package['version']}")) is not None
    ]


def _pipfile_lock(text: str) -> list[tuple[SpecifierSet, str]]:
    try:
        data = json.loads(text)
    except ValueError:
        return []
    found = []
    for section in ("default", "develop"):
        version = data.get(section, {}).get("torch", {}).get("version") if isinstance(data, dict) else None
        if isinstance(version, str) and (spec := _specifier(version)) is not None:
            found.append((spec, f"torch{version} (locked)"))
    return found


def _conda(text: str) -> list[tuple[SpecifierSet, str]]:
    """`- pytorch=2.3` / `- pytorch==2.3.1` among conda's dependencies, `torch...` among pip's."""
    found = []
    for operator, version in _CONDA_PIN.findall(text):
        spec = _specifier(f"=={version}" if operator == "==" else f"=={version.rstrip('.*')}.*")
        if spec is not None:
            found.append((spec, f"pytorch={version}"))
    pip_lines = "\n".join(line for line in text.splitlines() if re.match(r"\s*-\s*torch\b", line))
    return found + _lines(pip_lines)


@lru_cache(maxsize=256)
def _specifier(text: str) -> SpecifierSet | None:
    try:
        return SpecifierSet(text.replace(" ", ""))
    except InvalidSpecifier:
        return None


def _parses(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True
