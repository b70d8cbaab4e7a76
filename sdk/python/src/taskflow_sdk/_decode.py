"""Turning the API's JSON into the dataclasses of models.py and back."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")

_FRACTION = re.compile(r"\.(\d+)")


def parse_time(value: str) -> _dt.datetime:
    """Parses an RFC 3339 time as the API writes it (UTC, up to nanoseconds)."""
    s = value.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    # Python keeps microseconds: cut a longer fraction (Go writes up to 9 digits).
    s = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], s, count=1)
    return _dt.datetime.fromisoformat(s)


def format_time(value: _dt.datetime) -> str:
    """RFC 3339 in UTC with milliseconds: 2024-01-01T12:00:00.000Z."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    value = value.astimezone(_dt.timezone.utc)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def json_name(f: dataclasses.Field) -> str:
    return f.metadata.get("json", f.name)


_hints_cache: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    h = _hints_cache.get(cls)
    if h is None:
        h = typing.get_type_hints(cls)
        _hints_cache[cls] = h
    return h


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _convert(args[0], value)
        return value
    if origin in (list, typing.List):
        (item,) = typing.get_args(tp) or (Any,)
        return [_convert(item, v) for v in value] if isinstance(value, list) else value
    if origin in (dict, typing.Dict):
        return value
    if tp is _dt.datetime and isinstance(value, str):
        try:
            return parse_time(value)
        except ValueError:
            return value
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return from_json(tp, value)
    return value


def from_json(cls: type[T], data: Any) -> T:
    """Builds the dataclass cls from a decoded JSON object. Unknown keys
    (a newer server's) go to the model's ``extra`` dict when it has one,
    else are dropped; missing optional keys take the field's default."""
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__}: want a JSON object, got {type(data).__name__}")
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    known = set()
    for f in dataclasses.fields(cls):
        if f.name == "extra":
            continue
        name = json_name(f)
        known.add(name)
        if name in data:
            kwargs[f.name] = _convert(hints[f.name], data[name])
    if any(f.name == "extra" for f in dataclasses.fields(cls)):
        kwargs["extra"] = {k: v for k, v in data.items() if k not in known}
    return cls(**kwargs)


def to_json(obj: Any) -> Any:
    """The JSON form of a dataclass (fields left at None are omitted),
    recursively; datetimes in RFC 3339."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if f.name == "extra":
                out.update(v or {})
                continue
            if v is None:
                continue
            out[json_name(f)] = to_json(v)
        return out
    if isinstance(obj, _dt.datetime):
        return format_time(obj)
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_json(v) for k, v in obj.items()}
    return obj
