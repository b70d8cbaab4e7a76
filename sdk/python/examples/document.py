"""The document.process example service in Python (the Go one is
extsvc/tools/document.go): the plain text of a text, HTML or Markdown
document, stored as a result file, with its statistics."""

from __future__ import annotations

import hashlib
import html
import re

from taskflow_sdk import Fail, Service

MAX_DOCUMENT_BYTES = 10 << 20

PARAMS_SCHEMA = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "maxLength": MAX_DOCUMENT_BYTES,
                    "description": "the document's text, HTML or Markdown"},
        "format": {"type": "string", "enum": ["text", "txt", "html", "markdown", "md"], "x-fold-case": True,
                   "description": "default: guessed from the content"},
    },
    "required": ["content"],
    "additionalProperties": False,
}

DROP_BLOCKS = re.compile(r"<(script|style|head|noscript)\b.*?</(script|style|head|noscript)\s*>", re.I | re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)
BLOCK_TAG = re.compile(r"</?(p|div|br|li|ul|ol|h[1-6]|tr|table|section|article|header|footer|blockquote|pre)\b[^>]*>",
                       re.I)
TAG = re.compile(r"<[^>]*>", re.S)
MD_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
MD_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}\s+", re.M)
MD_QUOTE = re.compile(r"^[ \t]{0,3}>[ \t]?", re.M)
MD_LIST = re.compile(r"^[ \t]*([-*+]|\d+\.)\s+", re.M)
MD_FENCE = re.compile(r"^```.*$", re.M)
MD_EMPH = re.compile(r"(\*\*|__|\*|_|`)")
BLANK_RUNS = re.compile(r"\n{3,}")


def extract_text(content: str, fmt: str) -> str:
    """The document's text: tags, scripts and Markdown marks removed,
    white space folded, at most one blank line in a row."""
    if fmt == "html":
        s = DROP_BLOCKS.sub("", content)
        s = COMMENT.sub("", s)
        s = BLOCK_TAG.sub("\n", s)
        s = html.unescape(TAG.sub("", s))
    elif fmt == "markdown":
        s = MD_FENCE.sub("", content)
        s = MD_IMAGE.sub(r"\1", s)
        s = MD_LINK.sub(r"\1", s)
        s = MD_HEADING.sub("", s)
        s = MD_QUOTE.sub("", s)
        s = MD_LIST.sub("", s)
        s = MD_EMPH.sub("", s)
    else:
        s = content
    lines = [" ".join(line.split()) for line in s.replace("\r\n", "\n").split("\n")]
    return BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip() + "\n"


def guess_format(content: str) -> str:
    t = content.strip()
    lower = t.lower()
    if lower.startswith(("<!doctype html", "<html")) or (TAG.search(t) and "</" in lower):
        return "html"
    if MD_HEADING.search(t) or MD_LINK.search(t) or "```" in t:
        return "markdown"
    return "text"


FORMATS = {"": "", "md": "markdown", "markdown": "markdown", "txt": "text", "text": "text", "html": "html"}


async def handle(task) -> dict:
    p = task.params or {}
    unknown = set(p) - {"content", "format"}
    if unknown:
        raise Fail("INVALID_PARAMS", f"params: unknown field {sorted(unknown)[0]!r}")
    content, fmt = p.get("content"), p.get("format") or ""
    if not isinstance(content, str) or not content.strip():
        raise Fail("INVALID_PARAMS", "content: required (the document's text, HTML or Markdown)")
    if len(content.encode()) > MAX_DOCUMENT_BYTES:
        raise Fail("INVALID_PARAMS", f"content: exceeds {MAX_DOCUMENT_BYTES} bytes")
    if not isinstance(fmt, str) or fmt.lower() not in FORMATS:
        raise Fail("INVALID_PARAMS", f"format {fmt!r}: want text, html or markdown")
    fmt = FORMATS[fmt.lower()] or guess_format(content)
    text = extract_text(content, fmt)
    data = text.encode()
    url = await task.put_file(f"{task.id}.txt", "text/plain; charset=utf-8", data)
    preview = text if len(text) <= 200 else text[:200] + "…"
    words = len(text.split())
    return {"file_url": url, "summary": f"extracted {words} words from {fmt}",
            "metadata": {"format": fmt, "words": words, "characters": len(text), "lines": text.count("\n"),
                         "preview": preview.strip(), "sha256": hashlib.sha256(data).hexdigest()}}


def register(svc: Service) -> None:
    svc.task("document.process", description="Extracts the text, headings and statistics of a document "
             "(text, HTML or Markdown).", params_schema=PARAMS_SCHEMA, notify="Your document is processed")(handle)
