"""load_catalog: defaults < TOML file < environment variables < keyword arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from icepark.catalog import FilesystemCatalog, SqlCatalog, load_catalog
from icepark.catalog.config import catalog_properties, env_properties, file_properties
from icepark.errors import UnsupportedFeature, ValidationError

TOML = """
[catalog.prod]
type = "filesystem"
warehouse = "{warehouse}"
retries = 3
debug = true

[catalog.prod.s3]
endpoint = "http://minio:9000"
region = "eu-west-1"

[catalog.other]
uri = "sqlite:///nowhere.db"
"""


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "icepark.toml"
    path.write_text(TOML.format(warehouse=tmp_path / "fs-wh"))
    return path


@pytest.mark.parametrize(("environ", "explicit", "expected"), [
    ({}, {}, {"type": "sql", "warehouse": "./warehouse"}),
    ({}, {"warehouse": "/w", "uri": "sqlite:///x.db"},
     {"type": "sql", "warehouse": "/w", "uri": "sqlite:///x.db"}),
    ({"ICEPARK_CATALOG__DEFAULT__WAREHOUSE": "/env"}, {}, {"type": "sql", "warehouse": "/env"}),
    ({"ICEPARK_CATALOG__DEFAULT__WAREHOUSE": "/env"}, {"warehouse": "/kw"},
     {"type": "sql", "warehouse": "/kw"}),
    ({"icepark_catalog__default__s3__access_key_id": "AK"}, {},
     {"type": "sql", "warehouse": "./warehouse", "s3.access-key-id": "AK"}),
    ({"ICEPARK_CATALOG__OTHER__URI": "x", "ICEPARK_CATALOG__DEFAULT": "y", "ICEPARK_X": "z"},
     {}, {"type": "sql", "warehouse": "./warehouse"}),
], ids=["defaults", "keywords", "env", "keywords over env", "env key spelling", "other names"])
def test_precedence_without_a_file(environ: dict[str, str], explicit: dict[str, str],
                                   expected: dict[str, str]) -> None:
    assert catalog_properties("default", explicit, environ) == expected


def test_file_then_env_then_keywords(config_file: Path, tmp_path: Path) -> None:
    environ = {"ICEPARK_CONFIG": str(config_file)}
    from_file = file_properties("prod", environ)
    assert from_file == {"type": "filesystem", "warehouse": str(tmp_path / "fs-wh"),
                         "retries": "3", "debug": "true", "s3.endpoint": "http://minio:9000",
                         "s3.region": "eu-west-1"}
    environ["ICEPARK_CATALOG__PROD__S3__REGION"] = "us-east-1"
    environ["ICEPARK_CATALOG__PROD__RETRIES"] = "5"
    merged = catalog_properties("prod", {"retries": "7"}, environ)
    assert merged["s3.region"] == "us-east-1" and merged["retries"] == "7"
    assert merged["type"] == "filesystem"
    assert file_properties("missing", environ) == {}
    assert env_properties("prod", environ) == {"s3.region": "us-east-1", "retries": "5"}


def test_load_catalog_from_the_config_file(config_file: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICEPARK_CONFIG", str(config_file))
    catalog = load_catalog("prod")
    assert isinstance(catalog, FilesystemCatalog)
    assert catalog.properties["s3.endpoint"] == "http://minio:9000"
    catalog.create_namespace("db")
    assert (tmp_path / "fs-wh" / "db").is_dir()
    monkeypatch.setenv("ICEPARK_CATALOG__PROD__TYPE", "sql")
    monkeypatch.setenv("ICEPARK_CATALOG__PROD__WAREHOUSE", str(tmp_path / "sql-wh"))
    sql = load_catalog("prod")
    assert isinstance(sql, SqlCatalog)
    assert (tmp_path / "sql-wh" / "catalog.db").is_file()
    sql.close()


def test_home_config_file_and_builtin_defaults(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    catalog = load_catalog()
    assert isinstance(catalog, SqlCatalog) and catalog.name == "default"
    assert (tmp_path / "warehouse" / "catalog.db").is_file()
    catalog.close()
    home = tmp_path / "home"
    home.mkdir()
    (home / ".icepark.toml").write_text(
        f'[catalog.default]\ntype = "filesystem"\nwarehouse = "{tmp_path / "h"}"\n')
    assert isinstance(load_catalog(), FilesystemCatalog)


@pytest.mark.parametrize(("properties", "error", "message"), [
    ({"type": "hive"}, ValidationError, "Unknown catalog type 'hive'"),
    ({"type": "filesystem", "warehouse": "s3://bucket/wh"}, UnsupportedFeature, "local"),
    ({"type": "sql", "warehouse": "s3://bucket/wh"}, ValidationError, "needs a 'uri'"),
])
def test_bad_configurations(properties: dict[str, str], error: type[Exception],
                            message: str) -> None:
    with pytest.raises(error, match=message):
        load_catalog("x", **properties)


def test_config_file_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICEPARK_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ValidationError, match="missing config file"):
        load_catalog()
    bad = tmp_path / "bad.toml"
    bad.write_text("[catalog.default\n")
    monkeypatch.setenv("ICEPARK_CONFIG", str(bad))
    with pytest.raises(ValidationError, match="not valid TOML"):
        load_catalog()
    bad.write_text('[catalog]\ndefault = "sql"\n')
    with pytest.raises(ValidationError, match=r"\[catalog.default\] must be a table"):
        load_catalog()
