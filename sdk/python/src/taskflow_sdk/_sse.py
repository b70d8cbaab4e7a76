"""A Server-Sent Events parser (the notification feed's wire format)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional


@dataclass
class SSEEvent:
    event: str = "message"
    data: str = ""
    id: Optional[str] = None
    retry: Optional[int] = None


@dataclass
class SSEParser:
    """Feed it lines (without their line ends); it returns an event at
    each blank line that ends one. Comments (``: heartbeat``) are skipped."""

    _event: str = ""
    _data: list = field(default_factory=list)
    _id: Optional[str] = None
    _retry: Optional[int] = None
    _seen: bool = False

    def feed(self, line: str) -> Optional[SSEEvent]:
        if line == "":
            if not self._seen:
                return None
            ev = SSEEvent(event=self._event or "message", data="\n".join(self._data), id=self._id, retry=self._retry)
            self._event, self._data, self._id, self._retry, self._seen = "", [], None, None, False
            return ev
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            if "\x00" not in value:
                self._id = value
        elif name == "retry":
            if value.isdigit():
                self._retry = int(value)
        else:
            return None
        self._seen = True
        return None


def parse_lines(lines: Iterable[str]) -> Iterator[SSEEvent]:
    p = SSEParser()
    for line in lines:
        ev = p.feed(line.rstrip("\r\n"))
        if ev is not None:
            yield ev
