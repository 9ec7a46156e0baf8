"""Corrupt, truncated and non-Parquet data and delete files: every read through the public API
raises ``CorruptFile`` naming the file, never pyarrow's ``ArrowInvalid`` or ``OSError``; a
missing file stays ``FileNotFound``."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icepark.catalog import load_catalog
from icepark.catalog.base import BaseCatalog
from icepark.errors import CorruptFile, FileNotFound, StorageError
from icepark.io.arrow.parquet_file import decoded_batches, decoding, open_parquet, read_footer
from icepark.io.arrow.schema import to_arrow_schema
from icepark.io.fileio import ArrowFileIO
from icepark.io.parquet.delete_writer import (
    EqualityDeleteWriter,
    PositionDeleteWriter,
    position_deletes_batch,
)
from icepark.io.parquet.metrics import read_float_stats
from icepark.io.parquet.schema import parquet_schema
from icepark.spec.manifest import DataFile
from icepark.spec.schema import Schema
from icepark.spec.types import DOUBLE, LONG, STRING, NestedField
from icepark.table.table import Table

SCHEMA = Schema.of(NestedField.required(1, "id", LONG), NestedField.optional(2, "s", STRING),
                   NestedField.optional(3, "x", DOUBLE))
ROWS = pa.table({"id": pa.array(range(2000), pa.int64()),
                 "s": [f"value {i % 97}" * 3 for i in range(2000)],
                 "x": [i / 7 for i in range(2000)]})


def _garbage_pages(data: bytes) -> bytes:
    """The pages between the magic and the footer overwritten: the footer still decodes."""
    footer = int.from_bytes(data[-8:-4], "little") + 8
    middle = len(data) - footer - 4
    return data[:4] + bytes((7 * i + 3) % 256 for i in range(middle)) + data[-footer:]


CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "text": lambda _: b"id,s\n1,hello\n",
    "empty": lambda _: b"",
    "half": lambda data: data[: len(data) // 2],
    "footer-cut": lambda data: data[:-5],
    "magic-only": lambda _: b"PAR1",
    "garbage-magic": lambda data: data[:-4] + b"XXXX",
    "garbage-footer-length": lambda data: data[:-8] + b"\xff\xff\xff\x7fPAR1",
    "garbage-pages": _garbage_pages,
}


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaseCatalog]:
    root = tmp_path_factory.mktemp("corrupt")
    catalog = load_catalog("corrupt", type="filesystem", warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    yield catalog


def _table(catalog: BaseCatalog) -> Table:
    table = catalog.create_table(f"db.t{uuid.uuid4().hex[:8]}", SCHEMA)
    table.append(ROWS)
    return table.refresh()


def _data_file(table: Table) -> DataFile:
    [task] = list(table.scan().plan_files())
    return task.data_file


def _corrupt(path: str, how: Callable[[bytes], bytes]) -> None:
    data = Path(path).read_bytes()
    Path(path).write_bytes(how(data))


@pytest.mark.parametrize("how", list(CORRUPTIONS), ids=list(CORRUPTIONS))
def test_corrupt_data_file(catalog: BaseCatalog, how: str) -> None:
    table = _table(catalog)
    path = _data_file(table).file_path
    _corrupt(path, CORRUPTIONS[how])
    with pytest.raises(CorruptFile) as info:
        table.scan().to_arrow()
    assert f"Data file {path} is not a valid Parquet file: " in str(info.value)
    with pytest.raises(CorruptFile, match="not a valid Parquet file"):
        table.scan("id > 5").to_arrow()  # with row-group pruning


def test_missing_data_file_is_file_not_found(catalog: BaseCatalog) -> None:
    table = _table(catalog)
    path = _data_file(table).file_path
    Path(path).unlink()
    with pytest.raises(FileNotFound, match=path):
        table.scan().to_arrow()


def _add_deletes(table: Table, kind: str) -> DataFile:
    data_file = _data_file(table)
    spec, schema = table.spec(), table.schema()
    where = f"{table.location}/data/{kind}-deletes-{uuid.uuid4()}.parquet"
    writer: PositionDeleteWriter | EqualityDeleteWriter
    if kind == "position":
        writer = PositionDeleteWriter(table.io, lambda: where, schema, spec, (),
                                      table.properties)
        writer.write(position_deletes_batch({data_file.file_path: [0, 5, 9]}))
    else:
        writer = EqualityDeleteWriter(table.io, lambda: where, schema, spec, (),
                                      table.properties, equality_ids=[1])
        writer.write(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    [delete_file] = writer.close()
    with table.new_row_delta() as delta:
        delta.add_deletes(delete_file)
    table.refresh()
    assert table.scan().to_arrow().num_rows == ROWS.num_rows - 3
    return delete_file


@pytest.mark.parametrize("how", ["text", "half", "garbage-magic", "garbage-pages"])
@pytest.mark.parametrize(("kind", "what"), [("position", "Position delete file"),
                                            ("equality", "Equality delete file")])
def test_corrupt_delete_file(catalog: BaseCatalog, kind: str, what: str, how: str) -> None:
    table = _table(catalog)
    delete_file = _add_deletes(table, kind)
    _corrupt(delete_file.file_path, CORRUPTIONS[how])
    with pytest.raises(CorruptFile) as info:
        table.refresh().scan().to_arrow()
    assert f"{what} {delete_file.file_path} is not a valid Parquet file: " in str(info.value)


def test_missing_delete_file_is_file_not_found(catalog: BaseCatalog) -> None:
    table = _table(catalog)
    delete_file = _add_deletes(table, "position")
    Path(delete_file.file_path).unlink()
    with pytest.raises(FileNotFound, match=delete_file.file_path):
        table.refresh().scan().to_arrow()


# ------------------------------------------------------------ footer and metrics reads in io


@pytest.fixture
def bad_file(tmp_path: Path) -> str:
    good = tmp_path / "good.parquet"
    pq.write_table(ROWS.cast(to_arrow_schema(SCHEMA)), good)  # with field IDs
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(_garbage_pages(good.read_bytes()))
    return str(bad)


def test_footer_metrics_and_schema_reads_name_the_file(bad_file: str, tmp_path: Path) -> None:
    io = ArrowFileIO()
    not_parquet = tmp_path / "notes.parquet"
    not_parquet.write_text("just text")
    with pytest.raises(CorruptFile, match=f"Parquet file {not_parquet} is not a valid"):
        parquet_schema(str(not_parquet))
    with io.new_input(str(not_parquet)).open() as f, pytest.raises(
            CorruptFile, match=f"Data file {not_parquet} is not a valid Parquet file"):
        read_footer(f, str(not_parquet))
    with pytest.raises(CorruptFile, match=f"Data file {bad_file} is not a valid Parquet file"):
        read_float_stats(bad_file, SCHEMA)  # the footer decodes, the pages do not
    with io.new_input(bad_file).open() as f, pytest.raises(CorruptFile, match=r"in\.parquet"):
        read_float_stats(f, SCHEMA, location="in.parquet")


def test_only_decoding_errors_are_relabelled(bad_file: str) -> None:
    """Errors of the code consuming the batches, and OS errors with an errno, pass through."""
    with ArrowFileIO().new_input(bad_file).open() as f:
        parquet = open_parquet(f, bad_file)
        assert parquet.metadata.num_rows == ROWS.num_rows

        def fails() -> Iterator[int]:
            yield 1
            raise PermissionError(13, "Permission denied")

        with pytest.raises(PermissionError):
            list(decoded_batches(fails(), bad_file))
        with pytest.raises(ZeroDivisionError):
            for _ in decoded_batches([1], bad_file):
                _ = 1 // 0


def test_a_read_the_object_store_fails_is_a_storage_error_not_a_corrupt_file(
        bad_file: str) -> None:
    """pyarrow's S3 file system raises an errno-less OSError, as a decoding error is, for a
    request that fails mid-file ("AWS Error <code> during <operation> operation: ...")."""
    def cut_off() -> Iterator[int]:
        yield 1
        raise OSError("When reading information for key 'k' in bucket 'b': AWS Error "
                      "NETWORK_CONNECTION during GetObject operation: curlCode: 28")

    with pytest.raises(StorageError, match=r"^Cannot read s3://b/k: .*NETWORK_CONNECTION"):
        list(decoded_batches(cut_off(), "s3://b/k"))
    # an errno-less OSError of the file's own is still a corrupt file
    with pytest.raises(CorruptFile), decoding(bad_file):
        raise OSError("Couldn't deserialize thrift: TProtocolException: Invalid data")


# ------------------------------------------------------------------------------------- Spark


@pytest.mark.spark
def test_spark_read_of_a_corrupt_data_file(catalog: BaseCatalog, spark: Any) -> None:
    """Spark reads data files with its own (JVM) Parquet reader: a corrupt file fails the
    query with Spark's exception (a ``Py4JJavaError`` wrapping ``SparkException
    [FAILED_READ_FILE.NO_HINT] Encountered error while reading file <path>``). Where icepark's
    Python code opens the file on the driver (footers read for a name-mapped table), it is
    ``CorruptFile``."""
    from icepark.spark import read  # noqa: PLC0415 - Spark only in this test

    table = _table(catalog)
    path = _data_file(table).file_path
    _corrupt(path, CORRUPTIONS["garbage-magic"])
    with pytest.raises(Exception) as info:  # Spark's own (Py4JJavaError)
        read(spark, table).collect()
    assert not isinstance(info.value, CorruptFile)
    assert "FAILED_READ_FILE" in str(info.value)
    assert path.rsplit("/", 1)[1] in str(info.value)
    mapped = table.set_properties({"schema.name-mapping.default": (
        '[{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["s"]}, '
        '{"field-id": 3, "names": ["x"]}]')})
    with pytest.raises(CorruptFile, match=f"Data file {path} is not a valid Parquet file"):
        read(spark, mapped).collect()
