"""HTML text for the pages: escaping, the frame of a page, its stylesheet.

    value ──esc(value)──► text safe between tags and inside a quoted attribute: secrets scrubbed
        (``secrets.scrub``), ``& < > " '`` as entities, characters Python does not call printable
        (controls, bidi overrides, lone surrogates) written as their escapes (``\\x1b``), newlines
        and tabs kept (the page shows predictions with ``white-space: pre-wrap``)
    tag(name, body, **attrs) ──► "<name a="...">body</name>" (attribute values escaped; body as given)
    page(title, body, script) ──► a whole HTML document: UTF-8, the stylesheet inline, the script inline
        at the end of the body, and a Content-Security-Policy that forbids every load from elsewhere
        (``default-src 'none'``): the page is one file and opens offline

Text from a report never goes into a ``<script>``: the scripts are this package's constants, and
what they read is in ``data-*`` attributes (escaped like any other attribute). So a prediction such
as ``</script><script>alert(1)`` is shown as text.

Public names: ``esc``, ``tag``, ``page``, ``CSS``.
"""

from __future__ import annotations

import html
from typing import Any

from ..secrets import scrub

__all__ = ["CSS", "esc", "page", "tag"]


def _visible(char: str) -> str:
    if char in "\n\t" or char.isprintable():
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def esc(value: Any) -> str:
    """``value`` as HTML text (see the module docstring)."""
    text = scrub("" if value is None else str(value))
    if not text.isprintable():
        text = "".join(_visible(c) for c in text)
    return html.escape(text, quote=True)


def tag(name: str, body: str = "", **attrs: Any) -> str:
    """``<name ...>body</name>``; ``class_`` is ``class``, ``data_x`` is ``data-x``; None leaves an attribute out."""
    parts = [name]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        key = key.rstrip("_").replace("_", "-")
        parts.append(key if value is True else f'{key}="{esc(value)}"')
    return f"<{' '.join(parts)}>{body}</{name}>"


CSS = """
:root { --pass: #1a7f37; --fail: #cf222e; --undecided: #9a6700; --muted: #57606a; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 1rem 1.5rem 3rem; color: #1f2328; background: #fff; }
h1 { font-size: 1.5rem; margin: .5rem 0; } h2 { font-size: 1.2rem; margin: 2rem 0 .5rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1rem; margin: 1.2rem 0 .4rem; }
.muted, .note { color: var(--muted); } .note { font-size: .9em; }
.banner { padding: .6rem .9rem; border-radius: 6px; margin: .6rem 0; font-weight: 600; }
.banner.scripted { background: #fff8c5; border: 2px solid #d4a72c; color: #6a4b00; }
.banner.partial { background: #fff1e5; border: 1px solid #ffb77c; }
.verdict { padding: .7rem 1rem; border-radius: 6px; border-left: 6px solid var(--muted); background: #f6f8fa; }
.verdict.passed { border-color: var(--pass); } .verdict.failed { border-color: var(--fail); }
.verdict.not-decided { border-color: var(--undecided); }
.verdict .line { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-weight: 600; white-space: pre-wrap; }
.status-passed { color: var(--pass); } .status-failed { color: var(--fail); } .status-not-decided { color: var(--undecided); }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: .5rem 0; }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; word-break: break-word; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border: 1px solid var(--line); padding: .25rem .5rem; vertical-align: top; }
th { background: #f6f8fa; }
table.t3 td.num, table.t3 th.num { text-align: right; white-space: nowrap; }
table.t3 td.below { background: #ffebe9; } table.t3 td.above { background: #dafbe1; }
table.t3 tr.total td { font-weight: 700; border-top: 2px solid #8c959f; }
table.t3 .iv { display: block; font-size: .75em; color: var(--muted); font-weight: 400; }
.chart svg { max-width: 100%; height: auto; }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; align-items: flex-start; }
.filters { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; margin: .5rem 0; padding: .5rem;
           background: #f6f8fa; border-radius: 6px; }
table.samples { width: 100%; table-layout: fixed; }
table.samples td.pred, table.samples td.ans { white-space: pre-wrap; word-break: break-word;
    font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .85em; }
table.samples td.pred div { max-height: 16rem; overflow: auto; }
table.samples tr.fail td.score { color: var(--fail); font-weight: 700; }
table.samples tr.pass td.score { color: var(--pass); }
table.samples details pre { white-space: pre-wrap; word-break: break-word; max-height: 24rem; overflow: auto;
    background: #f6f8fa; padding: .5rem; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9em; }
"""


def page(title: str, body: str, script: str = "") -> str:
    """A whole document (see the module docstring); ``title`` is escaped, ``body`` and ``script`` are markup."""
    csp = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head>\n"
            f"<body>\n{body}\n" + (f"<script>{script}</script>\n" if script else "") + "</body></html>\n")
