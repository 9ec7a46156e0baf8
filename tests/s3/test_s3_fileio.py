"""Tables on an S3 endpoint (moto's server, tests/s3/conftest.py): a SQL catalog (a local
SQLite file) whose warehouse is ``s3://<bucket>/wh``, so metadata and data files are both
objects in the bucket. What the tests read back through icepark they also check through
boto3, an independent client of the same endpoint. The secret key must never appear in a
metadata file, a snapshot summary, a log record, a repr or an error message."""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import pyarrow as pa
import pytest

from icepark.catalog import load_catalog
from icepark.catalog.base import BaseCatalog
from icepark.errors import (
    AlreadyExists,
    CommitFailed,
    FileNotFound,
    StorageError,
    ValidationError,
)
from icepark.io.fileio import ArrowFileIO, s3_options
from icepark.spec.partitioning import PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField
from icepark.table.maintenance.orphans import remove_orphan_files
from icepark.table.table import Table
from tests.s3.conftest import S3Server

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "kind", STRING))


def _rows(start: int, stop: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, stop), pa.int64()),
                     "kind": [("a", "b", "c")[i % 3] for i in range(start, stop)]})


def _catalog(server: S3Server, bucket: str, tmp_path: Any, **props: str) -> BaseCatalog:
    catalog = load_catalog("s3test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                           warehouse=f"s3://{bucket}/wh", **server.properties(), **props)
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    return catalog


def _objects(server: S3Server, bucket: str, prefix: str = "") -> dict[str, bytes]:
    """Every object of the bucket under ``prefix``, read with boto3, but for the empty
    directory markers (``d/``) pyarrow leaves when it deletes a directory's last file."""
    client: Any = server.client()
    keys = [o["Key"] for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix) for o in page.get("Contents", [])
        if not (o["Key"].endswith("/") and o["Size"] == 0)]
    return {k: client.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys}


def _table(catalog: BaseCatalog, name: str = "db.t", **props: str) -> Table:
    spec = PartitionSpecBuilder(SCHEMA).identity("kind").build()
    return catalog.create_table(name, SCHEMA, partition_spec=spec, properties=props)


def test_s3_options_path_style() -> None:
    assert s3_options({"s3.path-style-access": "true"})["force_virtual_addressing"] is False
    assert s3_options({"s3.force-virtual-addressing": "true"})["force_virtual_addressing"]
    assert "force_virtual_addressing" not in s3_options({"s3.path-style-access": "false"})
    with pytest.raises(ValidationError, match=r"s3\.path-style-access"):
        s3_options({"s3.path-style-access": "yes"})


def test_file_io_round_trip(s3_server: S3Server, bucket: str) -> None:
    io = ArrowFileIO(s3_server.properties())
    big = os.urandom(12 * 1024 * 1024 + 5)  # more than one 5 MiB multipart part
    io.new_output(f"s3://{bucket}/d/big.bin").write(big)
    io.new_output(f"s3://{bucket}/d/e/small.txt").write(b"hello")
    stored = _objects(s3_server, bucket)
    assert stored == {"d/big.bin": big, "d/e/small.txt": b"hello"}
    assert io.new_input(f"s3://{bucket}/d/big.bin").read() == big
    assert io.new_input(f"s3://{bucket}/d/big.bin").length() == len(big)
    with io.new_input(f"s3://{bucket}/d/big.bin").open() as f:  # seekable reads
        f.seek(len(big) - 5)
        assert f.read() == big[-5:]
    assert [(i.location, i.size) for i in io.list_prefix(f"s3://{bucket}/d")] == [
        (f"s3://{bucket}/d/big.bin", len(big)), (f"s3://{bucket}/d/e/small.txt", 5)]
    assert all(i.modified_ms is not None and i.modified_ms > 0
               for i in io.list_prefix(f"s3://{bucket}/d"))
    files, dirs = io.list_directory(f"s3://{bucket}/d")
    assert [f.location for f in files] == [f"s3://{bucket}/d/big.bin"]
    assert dirs == [f"s3://{bucket}/d/e"]
    assert list(io.list_prefix(f"s3://{bucket}/missing")) == []
    with pytest.raises(AlreadyExists):
        io.new_output(f"s3://{bucket}/d/e/small.txt").write_exclusive(b"again")
    with pytest.raises(FileNotFound):
        io.new_input(f"s3://{bucket}/d/nothing").read()
    io.delete(f"s3://{bucket}/d/e/small.txt")
    io.delete(f"s3://{bucket}/d/e/small.txt")  # a missing file: nothing to do
    assert list(_objects(s3_server, bucket)) == ["d/big.bin"]
    assert not io.exists(f"s3://{bucket}/d/e/small.txt")


def test_table_on_s3(s3_server: S3Server, bucket: str, tmp_path: Any) -> None:
    catalog = _catalog(s3_server, bucket, tmp_path)
    table = _table(catalog)
    assert table.location == f"s3://{bucket}/wh/db.db/t"
    table.append(_rows(0, 30))
    table.append(_rows(30, 50))
    table.delete("kind = 'c'")  # a whole partition
    loaded = catalog.load_table("db.t")
    got = loaded.scan().to_arrow().sort_by("id")
    kept = [i for i in range(50) if i % 3 != 2]
    assert got.column("id").to_pylist() == kept
    assert got.column("kind").to_pylist() == [("a", "b", "c")[i % 3] for i in kept]
    assert sorted(loaded.scan("kind = 'b' AND id > 10", selected_fields=("id",)).to_arrow()
                  .column("id").to_pylist()) == [i for i in kept if i % 3 == 1 and i > 10]
    objects = _objects(s3_server, bucket)
    assert all(k.startswith("wh/db.db/t/") for k in objects)
    data = {k for k in objects if k.startswith("wh/db.db/t/data/")}
    assert {k.split("/")[4] for k in data} == {"kind=a", "kind=b", "kind=c"}
    live = {t.data_file.file_path for t in loaded.scan().plan_files()}
    assert {p.removeprefix(f"s3://{bucket}/") for p in live} <= data
    assert loaded.metadata_location.removeprefix(f"s3://{bucket}/") in objects


def test_commit_conflicts_on_s3(s3_server: S3Server, bucket: str, tmp_path: Any) -> None:
    # without the catalog's table lock, a stale writer loses the compare-and-swap ...
    catalog = _catalog(s3_server, bucket, tmp_path, **{"lock.enabled": "false"})
    table = _table(catalog)
    first, second = catalog.load_table("db.t"), catalog.load_table("db.t")
    first.append(_rows(0, 10))
    second.append(_rows(10, 20))  # ... and retries by replaying its append on the new version
    assert sorted(catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == \
        list(range(20))
    # with no retries the stale writer fails, and what it wrote is deleted from the bucket
    table = catalog.load_table("db.t").set_properties({"commit.retry.num-retries": "0"})
    stale = catalog.load_table("db.t")
    table.append(_rows(20, 30))
    before = set(_objects(s3_server, bucket))
    with pytest.raises(CommitFailed):
        stale.append(_rows(30, 40))
    assert set(_objects(s3_server, bucket)) == before
    final = catalog.load_table("db.t")
    assert sorted(final.scan().to_arrow().column("id").to_pylist()) == list(range(30))
    # so orphan removal, listing the table location on the bucket, finds nothing to remove
    future = int(time.time() * 1000) + 3_600_000
    assert remove_orphan_files(final, older_than_ms=future, dry_run=True).orphan_file_locations \
        == ()


def test_orphans_and_expiry_on_s3(s3_server: S3Server, bucket: str, tmp_path: Any) -> None:
    catalog = _catalog(s3_server, bucket, tmp_path)
    table = _table(catalog)
    table.append(_rows(0, 10))
    table.overwrite(_rows(100, 110))  # the first snapshot's files are now only in history
    client: Any = s3_server.client()
    client.put_object(Bucket=bucket, Key="wh/db.db/t/data/kind=a/stray.parquet", Body=b"x" * 7)
    future = int(time.time() * 1000) + 3_600_000
    found = remove_orphan_files(table, older_than_ms=future, dry_run=True)
    assert found.orphan_file_locations == (f"s3://{bucket}/wh/db.db/t/data/kind=a/stray.parquet",)
    assert found.orphan_bytes == 7
    done = remove_orphan_files(table, older_than_ms=future)
    assert done.deleted_files == 1
    assert "wh/db.db/t/data/kind=a/stray.parquet" not in _objects(s3_server, bucket)
    old_files = {t.data_file.file_path for t in table.scan(
        snapshot_id=table.history()[0].snapshot_id).plan_files()}
    table.expire_snapshots(older_than_ms=future, retain_last=1)
    remaining = {f"s3://{bucket}/{k}" for k in _objects(s3_server, bucket)}
    assert not old_files & remaining  # expiry deleted the files no snapshot reaches
    assert sorted(table.refresh().scan().to_arrow().column("id").to_pylist()) == \
        list(range(100, 110))


def test_secret_never_shown(s3_server: S3Server, bucket: str, tmp_path: Any,
                            caplog: pytest.LogCaptureFixture) -> None:
    secret = s3_server.secret_key
    caplog.set_level(logging.DEBUG)
    catalog = _catalog(s3_server, bucket, tmp_path)
    table = _table(catalog)
    table.append(_rows(0, 10))
    table = catalog.load_table("db.t")
    objects = _objects(s3_server, bucket)
    assert objects and not any(secret.encode() in body for body in objects.values())
    assert all(secret not in str(s.summary) for s in table.snapshots())
    assert secret not in str(table.properties)
    for shown in (repr(catalog), repr(table), repr(table.io), str(table.metadata)[:100_000],
                  caplog.text):
        assert secret not in shown

    # a wrong secret: the store refuses, and the error names neither secret
    wrong = "wrong" + secret[5:]
    bad = ArrowFileIO(s3_server.properties(**{"s3.secret-access-key": wrong}))
    with pytest.raises(StorageError, match=r"ACCESS_DENIED|SIGNATURE_DOES_NOT_MATCH") as refused:
        bad.new_input(table.metadata_location).read()
    assert refused.value.location == table.metadata_location
    assert str(refused.value).startswith(f"Cannot open {table.metadata_location}: ")
    for error in (refused.value, *_causes(refused.value)):
        assert secret not in str(error) and wrong not in str(error)
    with pytest.raises(StorageError, match=r"^Cannot (create|write) s3://"):
        bad.new_output(f"s3://{bucket}/elsewhere/x.bin").write(b"x")
    with pytest.raises(StorageError, match=r"^Cannot list s3://"):
        list(bad.list_prefix(f"s3://{bucket}/wh"))
    bad_catalog = load_catalog("s3test", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                               warehouse=f"s3://{bucket}/wh",
                               **s3_server.properties(**{"s3.secret-access-key": wrong}))
    with pytest.raises(StorageError) as loading:
        bad_catalog.load_table("db.t")
    assert secret not in str(loading.value) and wrong not in str(loading.value)
    assert wrong not in repr(bad_catalog) and wrong not in caplog.text

    # a wrong endpoint: nothing listens there
    nowhere = ArrowFileIO(s3_server.properties(**{"s3.endpoint": "http://127.0.0.1:9",
                                                  "s3.connect-timeout": "2"}))
    with pytest.raises(StorageError, match=r"127\.0\.0\.1:9") as unreachable:
        nowhere.new_input(table.metadata_location).read()
    assert secret not in str(unreachable.value)
    assert secret not in caplog.text


def _causes(error: BaseException) -> list[BaseException]:
    found = []
    while error.__cause__ is not None or error.__context__ is not None:
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
        found.append(error)
    return found
