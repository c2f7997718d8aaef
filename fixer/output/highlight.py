"""Python code coloured by the stdlib tokenizer.

Pygments' Python lexer compiles some hundred regexes when it is first made, which cost a tenth of a
second of every `fixer explain` that shows a fix; the tokenizer is already loaded and tells keywords,
strings, numbers and comments apart, which is all a card's few lines of code need. The text itself is
never changed: styles are laid over the code as written, so what a user copies is what the KB holds.
"""

from __future__ import annotations

import io
import keyword
import tokenize

from rich.text import Text

_STYLES = {
    tokenize.STRING: "green",
    tokenize.NUMBER: "cyan",
    tokenize.COMMENT: "bright_black",
}
_FSTRING = {
    getattr(tokenize, name) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END") if hasattr(tokenize, name)
}


def python(code: str) -> Text:
    """`code` with its tokens styled. A fragment the tokenizer cannot finish (an open bracket, a cut
    string) keeps the styles of what it read, and the rest stays plain."""
    text = Text(code)
    starts = [0]  # the offset of each line as the tokenizer counts them: split at "\n" only
    for line in code.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    previous = ""
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            style = "green" if previous in ("def", "class") and token.type == tokenize.NAME else _style(token)
            previous = token.string
            if style:
                (row, col), (end_row, end_col) = token.start, token.end
                text.stylize(style, starts[row - 1] + col, starts[end_row - 1] + end_col)
    except (tokenize.TokenError, SyntaxError):
        pass
    return text


def _style(token: tokenize.TokenInfo) -> str | None:
    if token.type == tokenize.NAME:
        if keyword.iskeyword(token.string):
            return "magenta"
        return "cyan" if token.string in ("self", "cls") else None
    if token.type == tokenize.OP and token.string == "@" and token.line.lstrip().startswith("@"):
        return "yellow"
    if token.type in _FSTRING:
        return "green"
    return _STYLES.get(token.type)
