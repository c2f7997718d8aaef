from __future__ import annotations

import ast
import importlib.util
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
import yaml

from fixer.explain.match import Matcher
from fixer.kb.catalog import Catalog, load

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("FIXER_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus" / "dev_tracebacks.yaml"
FIXTURES = Path(__file__).parent / "fixtures"


def pytest_configure(config: pytest.Config) -> None:
    """The tests read the built-in KB alone; a developer's own team directories would change the answers."""
    os.environ.pop("FIXER_KB_PATH", None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    try:
        import torch

        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except ImportError:
        gpus = 0
    for item in items:
        if "cuda" in item.keywords and not gpus:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA device"))
        elif "two_gpus" in item.keywords and gpus < 2:
            item.add_marker(pytest.mark.skip(reason=f"needs two CUDA devices, this machine has {gpus}"))


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Records of applied patches and the KB's index go to a directory of each test's own, never to the
    user's cache."""
    monkeypatch.setenv("FIXER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(autouse=True)
def _no_project(monkeypatch: pytest.MonkeyPatch) -> None:
    """fixer reads the project around the current directory for answers, and fixer's own tree (where the
    tests run) would answer; the tests of that reading name their project themselves."""
    monkeypatch.setenv("FIXER_PROJECT", "none")


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load(ROOT / "kb", strict=True)


@pytest.fixture(scope="session")
def matcher(catalog: Catalog) -> Matcher:
    return Matcher(catalog)


def corpus_items() -> list[dict]:
    if not CORPUS.exists():
        return []
    return [item for item in yaml.safe_load(CORPUS.read_text()) if item.get("expect")]


def kb_examples() -> list[tuple[str, int, str]]:
    """(entry id, example number, traceback) for every example in the KB, for parametrised tests."""
    cases = []
    for path in sorted((ROOT / "kb").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        for number, example in enumerate(data.get("examples", []), 1):
            cases.append((data["id"], number, example["traceback"]))
    return cases


@pytest.fixture
def default_meta() -> Iterator[None]:
    """The default device set to meta for one test, and put back."""
    import torch

    previous = torch.get_default_device()
    torch.set_default_device("meta")
    try:
        yield
    finally:
        torch.set_default_device(None if previous.type == "cpu" else previous)


@pytest.fixture
def gloo(tmp_path: Path) -> Iterator[None]:
    """A one-rank gloo process group for one test, destroyed after it."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def thread(url: object) -> str:
    """A thread's address as the sets compare it: no fragment, query or trailing slash."""
    return re.sub(r"[#?].*", "", str(url)).rstrip("/")


def threads_outside(catalog: Catalog, own: Path) -> set[str]:
    """The threads of the KB's examples and of every labelled set but `own`: a validation set must
    share none of them, or it validates what fixer was built from."""
    used = {thread(example.source) for entry in catalog for example in entry.examples}
    sets = [CORPUS, ROOT / "benchmarks" / "census" / "census.yaml", ROOT / "benchmarks" / "realcode" / "threads.yaml"]
    sets += [ROOT / "benchmarks" / d / f"{h}.yaml" for d in ("unseen", "interview") for h in ("tune", "holdout")]
    for path in sets:
        if path.exists() and path.resolve() != own.resolve():
            used |= {thread(item["source"]) for item in yaml.safe_load(path.read_text(encoding="utf-8"))}
    return used


def missing_imports(code: str, loads: Iterable[str] = ()) -> list[str]:
    """The top-level packages `code` imports, or that the libraries it calls `loads` on their own, that
    are not installed here: a repro of a library's error (bitsandbytes, keras) cannot show it without that
    library. A module the code writes itself (a `name.py` it creates, standing in for an installed
    library or an app's plug-in) is not missing."""
    tree = ast.parse(code)
    written = {
        Path(node.value).stem
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".py")
    }
    tops = set(loads) | {
        name.split(".")[0]
        for node in ast.walk(tree)
        for name in (
            [a.name for a in node.names] if isinstance(node, ast.Import)
            else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
            else []
        )
    }  # fmt: skip
    return sorted(top for top in tops - written if importlib.util.find_spec(top) is None)


def first_causes(report: str) -> list[str]:
    """The entry each explanation in a report puts first, in order (a notebook's copy is coloured)."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", report)
    return re.findall(r"Most likely cause:\s*\n.*?\n\s*([a-z0-9-]+) · score", plain, re.S)
