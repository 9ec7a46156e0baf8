"""Typed access to decoded JSON: every wrong or missing value is a ValidationError naming the key.

Private to :mod:`icepark.spec.serde`. ``what`` names the object being read ("table metadata",
"snapshot 17" ...) so a message says where the bad key is, e.g. ``Table metadata: 'location'
must be a string, not 5``.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any

from icepark.errors import ValidationError

JsonObject = Mapping[str, Any]

_SHORT = reprlib.Repr()
_SHORT.maxstring = 60
_SHORT.maxother = 60


def show(value: Any) -> str:
    """A short repr of a JSON value for error messages (JSON spelling for null/true/false)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _SHORT.repr(value)


def _kind(expected: str, what: str, key: str, value: Any) -> ValidationError:
    return ValidationError(f"{what}: {key!r} must be {expected}, not {show(value)}")


def missing(what: str, key: str) -> ValidationError:
    return ValidationError(f"{what} is missing required field {key!r}")


def as_object(value: Any, what: str) -> JsonObject:
    """``value`` as a JSON object, or a ValidationError saying ``what`` it should have been."""
    if not isinstance(value, Mapping):
        raise ValidationError(f"{what} must be a JSON object, not {show(value)}")
    return value


def as_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValidationError(f"{what} must be a JSON list, not {show(value)}")
    return value


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _get(obj: JsonObject, key: str, what: str) -> Any:
    if key not in obj:
        raise missing(what, key)
    return obj[key]


def get_int(obj: JsonObject, key: str, what: str) -> int:
    value = _get(obj, key, what)
    if not is_int(value):
        raise _kind("an integer", what, key, value)
    return int(value)


def opt_int(obj: JsonObject, key: str, what: str) -> int | None:
    """An optional integer: a missing key or JSON null is None."""
    value = obj.get(key)
    if value is None:
        return None
    if not is_int(value):
        raise _kind("an integer", what, key, value)
    return int(value)


def get_str(obj: JsonObject, key: str, what: str) -> str:
    value = _get(obj, key, what)
    if not isinstance(value, str):
        raise _kind("a string", what, key, value)
    return value


def opt_str(obj: JsonObject, key: str, what: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _kind("a string", what, key, value)
    return value


def get_bool(obj: JsonObject, key: str, what: str) -> bool:
    value = _get(obj, key, what)
    if not isinstance(value, bool):
        raise _kind("true or false", what, key, value)
    return value


def get_list(obj: JsonObject, key: str, what: str) -> list[Any]:
    value = _get(obj, key, what)
    if not isinstance(value, list):
        raise _kind("a JSON list", what, key, value)
    return value


def opt_list(obj: JsonObject, key: str, what: str) -> list[Any]:
    """An optional list: a missing key or JSON null is the empty list."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _kind("a JSON list", what, key, value)
    return value


def get_object(obj: JsonObject, key: str, what: str) -> JsonObject:
    value = _get(obj, key, what)
    if not isinstance(value, Mapping):
        raise _kind("a JSON object", what, key, value)
    return value


def int_list(obj: JsonObject, key: str, what: str, *, required: bool) -> list[int]:
    values = get_list(obj, key, what) if required else opt_list(obj, key, what)
    for value in values:
        if not is_int(value):
            raise _kind("a list of integers", what, key, values)
    return [int(v) for v in values]


def string_map(obj: JsonObject, key: str, what: str) -> dict[str, str]:
    """An optional string-to-string map (missing or null is empty)."""
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _kind("a JSON object", what, key, value)
    for k, v in value.items():
        if not isinstance(v, str):
            raise ValidationError(
                f"{what}: {key!r} must map strings to strings, but {k!r} is {show(v)}")
    return dict(value)
