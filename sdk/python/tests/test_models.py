"""The hand-written models against the live /openapi.json: a field the API
adds, drops or makes required fails here instead of drifting."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from taskflow_sdk import models
from taskflow_sdk._decode import json_name

MODELS = [c for c in vars(models).values()
          if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == models.__name__]


def _resolve(doc: dict, path: str) -> dict:
    """A schema by SCHEMA's path: Component, then .prop or .prop[] steps."""
    comps = doc["components"]["schemas"]
    head, *steps = path.split(".")
    # component names may hold dots (Submit.report.generate): take the longest match
    name = head
    while name not in comps and steps:
        name += "." + steps.pop(0)
    s = comps[name]
    for step in steps:
        items = step.endswith("[]")
        s = _deref(doc, s)["properties"][step[:-2] if items else step]
        if items:
            s = s["items"]
    return _deref(doc, s)


def _deref(doc: dict, s: dict) -> dict:
    while "$ref" in s:
        s = doc["components"]["schemas"][s["$ref"].rsplit("/", 1)[1]]
    if "allOf" in s:
        merged: dict = {"properties": {}, "required": []}
        for part in s["allOf"]:
            p = _deref(doc, part)
            merged["properties"].update(p.get("properties", {}))
            merged["required"] += p.get("required", [])
        merged["properties"].update(s.get("properties", {}))
        merged["required"] += s.get("required", [])
        return merged
    return s


@pytest.fixture(scope="module")
def openapi(server):
    return httpx.get(server.url + "/openapi.json").json()


def test_every_model_names_its_schema():
    assert len(MODELS) > 20
    for cls in MODELS:
        assert isinstance(getattr(cls, "SCHEMA", None), str), cls


@pytest.mark.parametrize("cls", [c for c in MODELS if c.SCHEMA], ids=lambda c: c.__name__)
def test_model_matches_schema(openapi, cls):
    schema = _resolve(openapi, cls.SCHEMA)
    props = set(schema.get("properties", {}))
    required = set(schema.get("required", []))
    fields = {json_name(f): f for f in dataclasses.fields(cls)
              if f.name != "extra" and not f.metadata.get("local")}
    pending = {n for n, f in fields.items() if f.metadata.get("since")}  # issue 26: not served yet
    assert set(fields) - pending - props == set(), f"{cls.__name__}: fields the schema does not have"
    assert props - set(fields) == set(), f"{cls.__name__}: schema properties the model lacks"
    no_default = {n for n, f in fields.items()
                  if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    assert no_default == required, f"{cls.__name__}: required fields differ (model {sorted(no_default)}, schema {sorted(required)})"
