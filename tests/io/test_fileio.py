"""FileIO on the local file system: read, write, exclusive create, delete, list."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
from pathlib import Path
from typing import Any

import pytest

from icepark.errors import (
    AlreadyExists,
    FileNotFound,
    IcebergError,
    StorageError,
    UnsupportedFeature,
)
from icepark.io.fileio import ArrowFileIO, s3_options


@pytest.mark.parametrize("scheme", ["", "file://"])
def test_write_read_exists_length_delete(file_io: ArrowFileIO, tmp_path: Path,
                                         scheme: str) -> None:
    location = f"{scheme}{tmp_path}/a/b/c.bin"
    assert not file_io.exists(location)
    file_io.new_output(location).write(b"\x00payload")  # parent directories are created
    assert file_io.exists(location)
    assert (tmp_path / "a/b/c.bin").read_bytes() == b"\x00payload"
    infile = file_io.new_input(location)
    assert (infile.location, infile.exists(), infile.length()) == (location, True, 8)
    assert infile.read() == b"\x00payload"
    with infile.open() as f:  # seekable
        f.seek(1)
        assert f.read(3) == b"pay"
    file_io.delete(location)
    assert not file_io.exists(location)
    file_io.delete(location)  # deleting a missing file does nothing, as on object stores


def test_missing_files_raise_file_not_found(file_io: ArrowFileIO, tmp_path: Path) -> None:
    location = f"file://{tmp_path}/missing.avro"
    infile = file_io.new_input(location)
    for action in (infile.read, infile.open, infile.length):
        with pytest.raises(FileNotFound, match=r"missing\.avro") as caught:
            action()
        assert isinstance(caught.value, FileNotFoundError)
        assert isinstance(caught.value, IcebergError)
        assert caught.value.location == location
    assert not infile.exists()
    error = pickle.loads(pickle.dumps(FileNotFound(location)))
    assert error.location == location and str(error) == f"File does not exist: {location}"


def test_a_failing_store_raises_a_typed_error_naming_the_operation_and_file(
        file_io: ArrowFileIO, tmp_path: Path) -> None:
    (tmp_path / "plain").write_bytes(b"x")
    under_a_file = f"{tmp_path}/plain/child.bin"  # its "directory" is a file
    for call, operation in ((lambda: file_io.new_input(str(tmp_path)).read(), "open"),
                            (lambda: file_io.new_output(under_a_file).write(b"y"), "create"),
                            (lambda: file_io.new_output(under_a_file).write_exclusive(b"y"),
                             "write")):
        with pytest.raises(StorageError) as failed:
            call()
        error = failed.value
        assert isinstance(error, OSError) and isinstance(error, IcebergError)
        assert (error.operation, str(error).split(":")[0]) == (
            operation, f"Cannot {operation} {error.location}")
        restored = pickle.loads(pickle.dumps(error))  # it crosses from Spark tasks
        assert (type(restored), str(restored), restored.errno) == (
            StorageError, str(error), error.errno)
    assert (tmp_path / "plain").read_bytes() == b"x"  # nothing was changed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


def test_create_refuses_to_overwrite_unless_asked(file_io: ArrowFileIO, tmp_path: Path) -> None:
    location = str(tmp_path / "x/f.txt")
    with file_io.new_output(location).create() as out:
        out.write(b"one")
    with pytest.raises(AlreadyExists, match=r"f\.txt"):
        file_io.new_output(location).create()
    with pytest.raises(AlreadyExists):
        file_io.new_output(location).write(b"two")
    assert file_io.new_input(location).read() == b"one"
    file_io.new_output(location).write(b"two", overwrite=True)
    assert file_io.new_input(location).read() == b"two"


def test_write_exclusive_publishes_once_and_leaves_no_temp_files(
        file_io: ArrowFileIO, tmp_path: Path) -> None:
    location = f"file://{tmp_path}/meta/v1.metadata.json"
    file_io.new_output(location).write_exclusive(b"{}")
    with pytest.raises(AlreadyExists, match=r"v1\.metadata\.json"):
        file_io.new_output(location).write_exclusive(b"{...}")
    assert file_io.new_input(location).read() == b"{}"
    assert os.listdir(tmp_path / "meta") == ["v1.metadata.json"]


def test_racing_threads_exactly_one_wins(file_io: ArrowFileIO, tmp_path: Path) -> None:
    location = str(tmp_path / "v2.metadata.json")
    barrier = threading.Barrier(8)
    outcomes: dict[int, str] = {}

    def publish(i: int) -> None:
        barrier.wait()
        try:
            file_io.new_output(location).write_exclusive(f"writer {i}".encode() * 1000)
            outcomes[i] = "won"
        except AlreadyExists:
            outcomes[i] = "lost"

    threads = [threading.Thread(target=publish, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, outcome in outcomes.items() if outcome == "won"]
    assert len(outcomes) == 8 and len(winners) == 1
    assert file_io.new_input(location).read() == f"writer {winners[0]}".encode() * 1000
    assert os.listdir(tmp_path) == ["v2.metadata.json"]


def _publish_in_process(location: str, i: int, barrier: Any, results: Any) -> None:
    barrier.wait()
    try:
        ArrowFileIO().new_output(location).write_exclusive(f"process {i}".encode() * 1000)
        results.put((i, "won"))
    except AlreadyExists:
        results.put((i, "lost"))


def test_racing_processes_exactly_one_wins(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    location = f"file://{tmp_path}/v3.metadata.json"
    barrier, results = ctx.Barrier(4), ctx.Queue()
    processes = [ctx.Process(target=_publish_in_process, args=(location, i, barrier, results))
                 for i in range(4)]
    for p in processes:
        p.start()
    outcomes = dict(results.get(timeout=120) for _ in processes)
    for p in processes:
        p.join(timeout=60)
    winners = [i for i, outcome in outcomes.items() if outcome == "won"]
    assert len(winners) == 1, outcomes
    data = (tmp_path / "v3.metadata.json").read_bytes()
    assert data == f"process {winners[0]}".encode() * 1000


def test_list_prefix_is_recursive_sorted_and_keeps_the_scheme(
        file_io: ArrowFileIO, tmp_path: Path) -> None:
    for name, size in (("b/2.avro", 2), ("a.json", 1), ("b/c/3.avro", 3)):
        file_io.new_output(f"{tmp_path}/t/{name}").write(b"x" * size)
    listed = list(file_io.list_prefix(f"file://{tmp_path}/t/"))
    assert [(i.location, i.size) for i in listed] == [
        (f"file://{tmp_path}/t/a.json", 1),
        (f"file://{tmp_path}/t/b/2.avro", 2),
        (f"file://{tmp_path}/t/b/c/3.avro", 3),
    ]
    assert all(isinstance(i.modified_ms, int) and i.modified_ms > 0 for i in listed)
    plain = [i.location for i in file_io.list_prefix(f"{tmp_path}/t/b")]
    assert plain == [f"{tmp_path}/t/b/2.avro", f"{tmp_path}/t/b/c/3.avro"]
    assert list(file_io.list_prefix(f"{tmp_path}/nothing-here")) == []


def test_properties_are_kept_out_of_repr_but_survive_pickling() -> None:
    io = ArrowFileIO({"s3.secret-access-key": "SECRET", "s3.access-key-id": "AKIA"})
    assert "SECRET" not in repr(io) and "AKIA" not in repr(io)
    copy = pickle.loads(pickle.dumps(io))
    assert isinstance(copy, ArrowFileIO) and repr(copy) == repr(io)


def test_s3_properties_map_to_pyarrow_options() -> None:
    assert s3_options({
        "s3.endpoint": "https://minio:9000", "s3.access-key-id": "id",
        "s3.secret-access-key": "secret", "s3.session-token": "token",
        "s3.region": "us-east-2", "s3.connect-timeout": "2.5",
        "s3.force-virtual-addressing": "true", "unrelated": "x",
    }) == {
        "access_key": "id", "secret_key": "secret", "session_token": "token",
        "region": "us-east-2", "endpoint_override": "minio:9000", "scheme": "https",
        "connect_timeout": 2.5, "force_virtual_addressing": True,
    }


def test_an_unknown_scheme_is_unsupported(file_io: ArrowFileIO) -> None:
    with pytest.raises(UnsupportedFeature, match="nosuchfs"):
        file_io.new_input("nosuchfs://bucket/key").read()
