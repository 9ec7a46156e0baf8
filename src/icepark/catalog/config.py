"""Catalog configuration: built-in defaults, a TOML file, environment variables, arguments.

Properties of catalog ``<name>`` are merged from (lowest to highest precedence):

1. built-in defaults: ``type = "sql"``, ``warehouse = "./warehouse"`` (the SQL catalog then
   defaults ``uri`` to ``sqlite:///<warehouse>/catalog.db``);
2. the TOML file named by ``$ICEPARK_CONFIG``, else ``~/.icepark.toml``: table
   ``[catalog.<name>]``; nested tables flatten with dots (``[catalog.default.s3]
   endpoint = ...`` is ``s3.endpoint``), and non-string values become strings;
3. environment variables ``ICEPARK_CATALOG__<NAME>__<KEY>``, as pyiceberg reads its
   ``PYICEBERG_CATALOG__...`` ones: case-insensitive, and in ``KEY`` a double underscore
   becomes ``.`` and a single one ``-`` (``ICEPARK_CATALOG__PROD__S3__ACCESS_KEY_ID`` sets
   ``s3.access-key-id`` of catalog ``prod``);
4. keyword arguments of :func:`icepark.catalog.load_catalog`.

>>> env = {"ICEPARK_CATALOG__PROD__S3__ACCESS_KEY_ID": "k", "ICEPARK_CATALOG__DEV__URI": "x"}
>>> env_properties("prod", env)
{'s3.access-key-id': 'k'}
>>> flatten({"type": "sql", "s3": {"endpoint": "http://minio:9000"}, "pool": 5})
{'type': 'sql', 's3.endpoint': 'http://minio:9000', 'pool': '5'}
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from typing import Any

from icepark.errors import ValidationError

CONFIG_ENV = "ICEPARK_CONFIG"
DEFAULT_CONFIG_FILE = "~/.icepark.toml"
ENV_PREFIX = "icepark_catalog__"
DEFAULTS: Mapping[str, str] = {"type": "sql", "warehouse": "./warehouse"}


def flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """A TOML table as flat string properties (nested keys joined with dots)."""
    flat: dict[str, str] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, bool):
            flat[name] = "true" if value else "false"
        else:
            flat[name] = str(value)
    return flat


def file_properties(name: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Catalog ``name``'s table in the config file (empty when there is no file).

    A file named by ``$ICEPARK_CONFIG`` must exist; ``~/.icepark.toml`` is optional.
    """
    environ = os.environ if environ is None else environ
    explicit = environ.get(CONFIG_ENV)
    path = os.path.expanduser(explicit or DEFAULT_CONFIG_FILE)
    try:
        with open(path, "rb") as f:
            document = tomllib.load(f)
    except FileNotFoundError:
        if explicit:
            raise ValidationError(f"{CONFIG_ENV} names a missing config file: {path}") from None
        return {}
    except tomllib.TOMLDecodeError as e:
        raise ValidationError(f"Config file {path} is not valid TOML: {e}") from None
    catalogs = document.get("catalog", {})
    if not isinstance(catalogs, Mapping):
        raise ValidationError(f"Config file {path}: 'catalog' must be a table")
    section = catalogs.get(name, catalogs.get(name.lower()))
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise ValidationError(f"Config file {path}: [catalog.{name}] must be a table")
    return flatten(section)


def env_properties(name: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Catalog ``name``'s properties from ``ICEPARK_CATALOG__<NAME>__<KEY>`` variables."""
    environ = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for variable, value in environ.items():
        lowered = variable.lower()
        if not lowered.startswith(ENV_PREFIX):
            continue
        parts = lowered[len("icepark_"):].split("__", maxsplit=2)
        if len(parts) != 3 or parts[1] != name.lower() or not parts[2]:
            continue
        found[parts[2].replace("__", ".").replace("_", "-")] = value
    return found


def catalog_properties(name: str, explicit: Mapping[str, str],
                       environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The merged properties of catalog ``name`` (see the module docstring)."""
    merged = dict(DEFAULTS)
    merged.update(file_properties(name, environ))
    merged.update(env_properties(name, environ))
    merged.update({str(k): str(v) for k, v in explicit.items()})
    return merged
