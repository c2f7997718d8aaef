"""What a draft entry (`fixer kb new`) still leaves for a person to write. A draft passes the schema, so
without this it could pass for a finished entry: `fixer kb lint` reports each field, and the catalog
leaves drafts out of ranking and exports unless `--drafts` asks for them."""

from __future__ import annotations

from collections.abc import Iterator

from fixer.kb.schema import Entry

# Domains reserved for examples (RFC 2606): a source there is a placeholder, never the thread quoted.
_PLACEHOLDER_HOSTS = ("example.com", "example.net", "example.org")


def unwritten(entry: Entry) -> list[str]:
    """What a draft (`fixer kb new`) left for a person to write: each field still starting with `TODO`,
    named by its path, and an example source on a placeholder domain. A draft passes the schema, so
    without this check it could pass for a finished entry."""
    found = [
        f"TODO left in {path}: {_what_to_write(text)}"
        for path, text in _strings(entry.model_dump())
        if text.startswith("TODO")
    ]
    for number, example in enumerate(entry.examples):
        host = example.source.host or ""
        if any(host == domain or host.endswith(f".{domain}") for domain in _PLACEHOLDER_HOSTS):
            found.append(f"examples[{number}].source is a placeholder ({host}): link the public page it is quoted from")
    return found


def _what_to_write(todo: str) -> str:
    """`TODO: write the fix in one sentence` -> `write the fix in one sentence`, its first line."""
    rest = todo.removeprefix("TODO").lstrip(" :-").strip()
    return rest.splitlines()[0] if rest else "write it"


def _strings(value: object, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string in a dumped entry with its path: `title`, `fix.steps[0]`, `quiz.wrong[1]`."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")
