"""The chance of a yes that each word of an entry's `facts:` stands for.

Authors say how a cause leans in words, not numbers: a number would claim a precision nobody counted.
`always` and `never` are for what the cause cannot be without; they stop short of 1 and 0 so that the
arithmetic of `fixer.explain.narrow` stays finite, and an answer against them rules the cause out.
"""

from __future__ import annotations

CHANCES = {"always": 0.97, "usually": 0.8, "sometimes": 0.5, "rarely": 0.2, "never": 0.03}
