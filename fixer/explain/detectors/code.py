"""What the detectors read: the failing lines the traceback printed, and, when the traceback came
from this machine, the user's own files around those lines."""

from __future__ import annotations

import ast
import contextlib
import io
import textwrap
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from fixer.explain.detectors import pasted, syntax
from fixer.explain.libraries import file_name
from fixer.explain.parse import MAX_CODE_CHARS, Frame
from fixer.explain.source import parse_source
from fixer.patching.targets import library_files, user_files

# A script is read back this many top-level statements from the failing line: what bears on a line is
# near it, and reading a generated script of 100,000 statements whole would take seconds.
MAX_SCRIPT_STATEMENTS = 1_000
MAX_PRINTED_LINES = 256
MAX_STATEMENT_LINES = 40  # a statement longer than this is a table of data, not a call laid out over lines


@dataclass(frozen=True)
class Line:
    """A source line a frame printed, and its tree when it parses on its own."""

    code: str
    library: str | None = None  # None: the user's own code
    where: str = ""  # `train.py:42`, as the frame names it
    # The whole statement the line begins, from its file on this machine, where it runs on past the line:
    # Python prints a statement's first line only, and a call laid out over lines keeps its arguments
    # below it. What the line holds is read from the statement; what it says is the printed line.
    statement: str = ""

    @property
    def user(self) -> bool:
        return self.library is None

    @property
    def third_party(self) -> bool:
        """Another project's code, where the same mistakes are made; not PyTorch's or Python's own."""
        return self.library is not None and self.library != "python" and self.library.split(".")[0] != "torch"

    # Read once and kept: some twenty detectors ask each printed line the same things, and a deep
    # recursion prints thousands of lines.
    @cached_property
    def tree(self) -> ast.AST | None:
        return syntax.parse_line(self.statement or self.code)

    @cached_property
    def calls(self) -> tuple[ast.Call, ...]:
        return tuple(syntax.calls(self.tree)) if self.tree is not None else ()

    @cached_property
    def tokens(self) -> tuple[tokenize.TokenInfo, ...]:
        """The line as Python tokens, which never fail: those before an unclosed bracket are the line's."""
        found: list[tokenize.TokenInfo] = []
        with contextlib.suppress(tokenize.TokenError, IndentationError, SyntaxError):
            found.extend(tokenize.generate_tokens(io.StringIO((self.statement or self.code).strip()).readline))
        return tuple(found)

    @cached_property
    def names(self) -> frozenset[str]:
        return frozenset(t.string for t in self.tokens if t.type == tokenize.NAME)


@dataclass(frozen=True)
class Scope:
    """One failing line in the user's file on this machine, with the code around it."""

    file: str  # the file's name, for messages
    line: int
    module: ast.Module = field(repr=False)
    names: dict[str, str] = field(repr=False)  # what the module's imported names stand for

    @cached_property
    def enclosing(self) -> tuple[ast.AST, ...]:
        """Functions and classes around the line, innermost first."""
        holding = reversed(_holding(self.module, self.line))
        return tuple(n for n in holding if isinstance(n, syntax.Function | ast.ClassDef))

    @property
    def function(self) -> syntax.Function | None:
        return next((n for n in self.enclosing if isinstance(n, syntax.Function)), None)

    @property
    def cls(self) -> ast.ClassDef | None:
        return next((n for n in self.enclosing if isinstance(n, ast.ClassDef)), None)

    @property
    def innermost(self) -> ast.AST:
        """The function around the line, else the module (a script runs top to bottom)."""
        return self.function or self.module

    @cached_property
    def statements(self) -> list[ast.stmt]:
        """The statements of the innermost scope, nested bodies included, in order."""
        if self.function is not None:
            return list(syntax.statements(self.function))
        return [s for top in self._script for s in (top, *syntax.statements(top))]

    @cached_property
    def _script(self) -> list[ast.stmt]:
        """The module's top-level statements up to the failing line, the last MAX_SCRIPT_STATEMENTS of them."""
        upto = [s for s in self.module.body if s.lineno <= self.line]
        return upto[-MAX_SCRIPT_STATEMENTS:]

    @cached_property
    def before(self) -> list[ast.stmt]:
        """The statements that start before the failing line: what ran before it (loops aside)."""
        return [s for s in self.statements if s.lineno < self.line]

    def last_binding(self, name: str, before: ast.stmt | None = None) -> ast.stmt | None:
        """The last statement before the failing line (and before `before`, when given) that binds `name`."""
        found = None
        for statement in self.before:
            if statement is before:
                break
            if name in syntax.assigned_names(statement):
                found = statement
        return found

    @cached_property
    def failing(self) -> ast.stmt | None:
        """The innermost statement that holds the failing line."""
        found = None
        for statement in self.statements:
            if statement.lineno <= self.line <= (statement.end_lineno or statement.lineno):
                found = statement
        return found

    @cached_property
    def failing_calls(self) -> list[ast.Call]:
        """Calls on the failing line, outermost first."""
        if self.failing is None:
            return []
        return [c for c in syntax.calls(self.failing) if c.lineno <= self.line <= (c.end_lineno or c.lineno)]

    @cached_property
    def conditional(self) -> frozenset[int]:
        """The statements (by `id`) that run only when a condition holds that the failing line does not
        share: under an `if` or `while`, in an `except` or a `match` case, not around the failing line.
        A move under `if args.cuda:` may not have run when the failing line did."""
        found: set[int] = set()
        for root in self.around:
            for node in ast.walk(root):
                for block in _guarded_blocks(node):
                    end = max((s.end_lineno or s.lineno) for s in block)
                    if not block[0].lineno <= self.line <= end:
                        found.update(id(s) for stmt in block for s in ast.walk(stmt) if isinstance(s, ast.stmt))
        return frozenset(found)

    def may_run_before(self, statement: ast.stmt) -> bool:
        """Whether a statement can run before the failing line: it comes first, or a loop around both
        runs it on the way round."""
        if statement.lineno <= self.line:
            return True
        return any(start <= statement.lineno <= end for start, end in self._loops_around)

    @cached_property
    def _loops_around(self) -> tuple[tuple[int, int], ...]:
        """The lines each loop holding the failing line spans."""
        return tuple(
            (loop.lineno, loop.end_lineno or loop.lineno)
            for root in self.around
            for loop in ast.walk(root)
            if isinstance(loop, ast.For | ast.While | ast.AsyncFor)
            and loop.lineno <= self.line <= (loop.end_lineno or loop.lineno)
        )

    @cached_property
    def moved_before(self) -> dict[str, int]:
        """Names surely moved before the failing line: `maybe_moved_before` less the moves that ran only
        under a condition the failing line does not share."""
        return {name: line for name, (line, guarded) in self._moves.items() if not guarded}

    @cached_property
    def maybe_moved_before(self) -> dict[str, int]:
        """Names moved before the failing line (`m.to(d)`, `m = m.cuda()`, `m = Net().to(d)`), with where,
        under a condition or not: what a detector that says "never moved" must rule out."""
        return {name: line for name, (line, _) in self._moves.items()}

    @cached_property
    def _moves(self) -> dict[str, tuple[int, bool]]:
        """Each name's last move before the failing line, and whether a condition guarded it; an
        unguarded move is kept over a later guarded one."""
        moved: dict[str, tuple[int, bool]] = {}
        for statement in self.before:
            guarded = id(statement) in self.conditional
            names = []
            if isinstance(statement, ast.Expr) and (name := syntax.moved(statement.value)):
                names.append(name)
            value = syntax.value_of(statement)
            if value is not None and syntax.is_move(value):
                names += syntax.assigned_names(statement)
            for name in names:
                earlier = moved.get(name)
                if earlier is None or not guarded or earlier[1]:
                    moved[name] = (statement.lineno, guarded)
        return moved

    @cached_property
    def around(self) -> tuple[ast.AST, ...]:
        """The code that bears on the line: the functions and classes around it, or for a line at module
        level, the module's statements up to it (a script, read as it ran)."""
        return self.enclosing or tuple(self._script)

    @cached_property
    def statements_around(self) -> list[ast.stmt]:
        """Every statement of `around`, nested ones included."""
        found: list[ast.stmt] = []
        for node in self.around:
            if isinstance(node, ast.stmt) and not isinstance(node, syntax.Function | ast.ClassDef):
                found.append(node)
            found.extend(syntax.statements(node))
        return found

    @cached_property
    def calls_around(self) -> list[ast.Call]:
        return [call for node in self.around for call in syntax.calls(node)]

    def where(self, node: ast.AST) -> str:
        return f"{self.file}:{getattr(node, 'lineno', self.line)}"


def _guarded_blocks(node: ast.AST) -> list[list[ast.stmt]]:
    """The statement lists under `node` that run only when a condition holds."""
    if isinstance(node, ast.If):
        return [b for b in (node.body, node.orelse) if b]
    if isinstance(node, ast.While | ast.ExceptHandler | ast.match_case):
        return [node.body] if node.body else []
    return []


@dataclass(frozen=True)
class Code:
    """Everything a detector may read about the user's code, innermost first."""

    lines: tuple[Line, ...] = ()  # every frame's printed line; detectors choose whose to read
    scopes: tuple[Scope, ...] = ()
    text: str = ""  # the whole paste: command lines and configurations show there
    # The lines a notebook printed up to a failing one, read as a file where no file is here, and the code
    # blocks the paste shows. They are a few lines of a longer file: what they show holds, what they lack
    # proves nothing.
    shown: tuple[Scope, ...] = ()
    # The failing lines of installed libraries (not PyTorch) the traceback passes through, read from this
    # machine: for detectors that follow what a failing line reads, whoever wrote it.
    library: tuple[Scope, ...] = ()
    # The traceback stops short of its exception line: its innermost line shown may not be the one that
    # failed, so what that line lacks proves nothing.
    cut: bool = False

    @property
    def showing(self) -> tuple[Scope, ...]:
        """The code around each failing line, from the user's file or else from what was printed of it:
        for detectors that report what the code does, never what it lacks."""
        return (*self.scopes, *self.shown)

    @classmethod
    def of(cls, frames: Iterable[Frame], text: str = "", *, read_files: bool = True, cut: bool = False) -> Code:
        frames = tuple(frames)
        files = user_files(frames) if read_files else {}
        libraries = library_files(frames) if read_files else {}
        whole = _whole_statements({**files, **libraries})
        # A deep recursion prints the same few frames thousands of times: each distinct line is read once.
        # Of a traceback deeper still, the innermost and the outermost lines are read: the failing code,
        # and the user's own calls that led to it.
        distinct = list(
            dict.fromkeys(
                Line(
                    f.code[:MAX_CODE_CHARS],
                    f.library,
                    f"{file_name(f.path)}:{f.line}" if f.line else file_name(f.path),
                    whole.get((file_name(f.path), f.code.strip()), ""),
                )
                for f in reversed(frames)
                if f.code
            )
        )
        half = MAX_PRINTED_LINES // 2
        printed = tuple(distinct if len(distinct) <= MAX_PRINTED_LINES else distinct[:half] + distinct[-half:])
        shown = tuple(s for f in reversed(frames) if f.is_user and f.context and (s := _printed_scope(f, files)))
        library = tuple(_scopes(libraries))
        return cls(printed, tuple(_scopes(files)), text, (*shown, *_pasted_scopes(text, frames)), library, cut)


def _whole_statements(files: dict[Path, tuple[int, ...]]) -> dict[tuple[str, str], str]:
    """The statements the failing lines of these files begin and that run on past them, by file name and
    line as printed; a compound statement's line (`for x in y:`) stays the line, its body being no part of
    what failed."""
    found: dict[tuple[str, str], str] = {}
    for path, numbers in files.items():
        parsed = parse_source(str(path))
        if parsed is None:
            continue
        module, source = parsed
        for number in numbers:
            statement = _statement_at(module, number)
            end = statement.end_lineno if statement is not None else None
            if statement is None or statement.lineno != number or end is None or end <= number:
                continue
            if hasattr(statement, "body") or end - number > MAX_STATEMENT_LINES:
                continue
            found[(path.name, source[number - 1].strip())] = textwrap.dedent("\n".join(source[number - 1 : end]))
    return found


def _statement_at(module: ast.Module, line: int) -> ast.stmt | None:
    """The innermost statement that holds the line."""
    innermost = _holding(module, line)[-1]
    return innermost if isinstance(innermost, ast.stmt) else None


def _holding(module: ast.Module, line: int) -> list[ast.AST]:
    """The module, then each statement (or handler, or case) that holds the line, outermost first: found by
    descending through those, since walking a big module whole costs seconds."""
    found: list[ast.AST] = []
    node: ast.AST | None = module
    while node is not None:
        found.append(node)
        node = next(
            (
                child
                for child in ast.iter_child_nodes(node)
                if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case)
                and getattr(child, "lineno", 0) <= line <= (getattr(child, "end_lineno", 0) or 0)
            ),
            None,
        )
    return found


def _scopes(files: dict[Path, tuple[int, ...]]) -> Iterator[Scope]:
    for path, lines in files.items():
        parsed = parse_source(str(path))
        if parsed is None:
            continue
        module = parsed[0]
        names = syntax.aliases(module)
        for line in reversed(lines):
            yield Scope(Path(path).name, line, module, names)


def _pasted_scopes(text: str, frames: tuple[Frame, ...]) -> Iterator[Scope]:
    """The code blocks the paste shows (fixer.explain.detectors.pasted), each as a file named "the
    paste" at its line of the paste: the failing one the traceback printed, or the last that ran."""
    printed = [f.code for f in frames if f.code]
    for block in pasted.blocks(text):
        found = pasted.parsed(block)
        if found is None:
            continue
        module, _ = found
        line = pasted.failing_line(module, block, printed)
        if line is not None:
            yield Scope(pasted.PASTE, line, module, syntax.aliases(module))


def _printed_scope(frame: Frame, files: dict[Path, tuple[int, ...]]) -> Scope | None:
    """The lines IPython printed up to a frame's failing line, parsed as the file they come from, at its
    line numbers. A first line that does not parse on its own (the tail of a call, an `else:`) is dropped
    until the rest does; the failing line must stay."""
    if frame.line is None or any(
        file_name(str(path)) == file_name(frame.path) and frame.line in lines for path, lines in files.items()
    ):
        return None
    lines = [line[:MAX_CODE_CHARS] for line in frame.context]
    while lines:
        try:
            module = ast.parse(textwrap.dedent("\n".join(lines)) + "\n")
        except (SyntaxError, ValueError):
            lines = lines[1:]
            continue
        ast.increment_lineno(module, frame.line - len(lines))
        return Scope(file_name(frame.path), frame.line, module, syntax.aliases(module))
    return None
