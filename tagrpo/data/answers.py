"""The last boxed answer of a text: a pure string function, shared by the math reward and the benchmark loaders."""

from __future__ import annotations

import re

_BOX = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_BRACELESS = re.compile(r"[ \t]+([^\s$]+)")


def extract_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{...}`` / ``\\fbox{...}`` (brace-matched) or ``\\boxed x``.

    Escaped braces (``\\{``, ``\\}``) do not count. A box whose braces never close is skipped in favour of an
    earlier complete one. Returns None if the text has no complete box.
    """
    for match in reversed(list(_BOX.finditer(text))):
        rest = text[match.end() :]
        stripped = rest.lstrip()
        if stripped.startswith("{"):
            content = _brace_content(stripped)
            if content is not None:
                return content.strip()
            continue
        braceless = _BRACELESS.match(rest)
        if braceless and braceless.group(1).rstrip(".,;"):
            return braceless.group(1).rstrip(".,;")
    return None


def _brace_content(text: str) -> str | None:
    """``text`` starts with ``{``: the content up to the matching ``}``, or None if it never closes."""
    depth, i = 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        depth += (ch == "{") - (ch == "}")
        if depth == 0:
            return text[1:i]
        i += 1
    return None
