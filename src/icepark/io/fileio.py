"""FileIO: reading, writing, deleting and listing files by location, on pyarrow.fs.

Spec, *File System Operations*: "Iceberg only requires that file systems support the following
operations: In-place write -- Files are not moved or altered once they are written. Seekable
reads -- Data file formats require seek support. Deletes -- Tables delete files that are no
longer used." and "Tables do not require rename".

:class:`FileIO` is the protocol the rest of icepark uses; :class:`ArrowFileIO` implements it on
``pyarrow.fs``, choosing the filesystem by the location's URI scheme: plain local paths and
``file:`` URIs use the local filesystem; ``s3://`` (also ``s3a``/``s3n``) an ``S3FileSystem``
configured from the FileIO properties; anything else (``gs://``, ``hdfs://`` ...) goes through
``pyarrow.fs.FileSystem.from_uri``. One filesystem is cached per (scheme, authority).
Locations keep their spelling: a file listed under ``file:///x`` is returned as
``file:///x/...``.

>>> import tempfile
>>> io = ArrowFileIO()
>>> root = tempfile.mkdtemp()
>>> io.new_output(f"file://{root}/a/b.txt").write(b"hello")
>>> io.new_input(f"file://{root}/a/b.txt").read(), io.exists(f"{root}/a/b.txt")
(b'hello', True)
>>> [i.size for i in io.list_prefix(f"file://{root}")]
[5]
>>> io.new_output(f"{root}/a/b.txt").write_exclusive(b"again")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
icepark.errors.AlreadyExists: Cannot create .../a/b.txt: it already exists
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from icepark.errors import (
    AlreadyExists,
    FileNotFound,
    IcebergError,
    StorageError,
    UnsupportedFeature,
    ValidationError,
)


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One listed file: its location (in the listing prefix's spelling), size and mtime."""

    location: str
    size: int
    modified_ms: int | None = None


class InputFile(Protocol):
    """A file to read."""

    @property
    def location(self) -> str: ...

    def length(self) -> int:
        """The file's size in bytes; :class:`FileNotFound` if it does not exist."""
        ...

    def exists(self) -> bool: ...

    def open(self) -> Any:
        """A seekable pyarrow ``NativeFile``; :class:`FileNotFound` if it does not exist."""
        ...

    def read(self) -> bytes:
        """The whole file; :class:`FileNotFound` if it does not exist."""
        ...


class OutputFile(Protocol):
    """A file to write once."""

    @property
    def location(self) -> str: ...

    def create(self, overwrite: bool = False) -> Any:
        """A writable pyarrow ``NativeFile``; ``AlreadyExists`` if the file exists and
        ``overwrite`` is false."""
        ...

    def write(self, data: bytes, overwrite: bool = False) -> None: ...

    def write_exclusive(self, data: bytes) -> None:
        """Publish the whole file so that exactly one of several concurrent writers wins;
        the others get ``AlreadyExists``."""
        ...


class FileIO(Protocol):
    """What icepark needs from a file system (see the module docstring)."""

    def new_input(self, location: str) -> InputFile: ...

    def new_output(self, location: str) -> OutputFile: ...

    def exists(self, location: str) -> bool: ...

    def delete(self, location: str) -> None: ...

    def list_prefix(self, prefix: str) -> Iterator[FileInfo]: ...


# FileIO property -> S3FileSystem keyword. The values are never logged or shown in a repr.
_S3_OPTIONS = {
    "s3.access-key-id": "access_key",
    "s3.secret-access-key": "secret_key",
    "s3.session-token": "session_token",
    "s3.region": "region",
    "s3.endpoint": "endpoint_override",
    "s3.proxy-uri": "proxy_options",
    "s3.role-arn": "role_arn",
    "s3.role-session-name": "session_name",
}
_S3_FLOAT_OPTIONS = {"s3.connect-timeout": "connect_timeout",
                     "s3.request-timeout": "request_timeout"}
_S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
_SECRETS = ("s3.secret-access-key", "s3.session-token")
"""FileIO properties whose values are taken out of any error message that might quote them."""


def s3_options(properties: Mapping[str, str]) -> dict[str, Any]:
    """``S3FileSystem`` keyword arguments from FileIO properties.

    An ``s3.endpoint`` with an ``http://`` or ``https://`` prefix also sets the scheme.
    Addressing: ``s3.path-style-access=true`` (the Iceberg FileIO property) puts the bucket in
    the path (``http://host/bucket/key``, as MinIO and most S3-compatible servers need);
    ``s3.force-virtual-addressing=true`` puts it in the host name (``bucket.host``); with
    neither, pyarrow's default: virtual-hosted on AWS, path-style with an ``s3.endpoint``.

    >>> s3_options({"s3.endpoint": "http://localhost:9000", "s3.region": "eu-west-1"})
    {'region': 'eu-west-1', 'endpoint_override': 'localhost:9000', 'scheme': 'http'}
    >>> s3_options({"s3.path-style-access": "true"})
    {'force_virtual_addressing': False}
    >>> s3_options({"s3.path-style-access": "true", "s3.force-virtual-addressing": "true"})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    icepark.errors.ValidationError: s3.path-style-access=true and ... contradict each other...
    """
    options: dict[str, Any] = {}
    for prop, keyword in _S3_OPTIONS.items():
        if properties.get(prop):
            options[keyword] = properties[prop]
    for prop, keyword in _S3_FLOAT_OPTIONS.items():
        if properties.get(prop):
            options[keyword] = float(properties[prop])
    endpoint = options.get("endpoint_override")
    if endpoint:
        for scheme in ("http", "https"):
            if endpoint.startswith(f"{scheme}://"):
                options["endpoint_override"] = endpoint.removeprefix(f"{scheme}://")
                options["scheme"] = scheme
    virtual = _flag(properties, "s3.force-virtual-addressing")
    path_style = _flag(properties, "s3.path-style-access")
    if virtual and path_style:
        raise ValidationError("s3.path-style-access=true and s3.force-virtual-addressing=true "
                              "contradict each other: set one")
    if virtual:
        options["force_virtual_addressing"] = True
    elif path_style:
        options["force_virtual_addressing"] = False
    return options


def _flag(properties: Mapping[str, str], key: str) -> bool:
    """A boolean FileIO property (absent: false)."""
    value = properties.get(key, "false").strip().lower()
    if value not in ("true", "false"):
        raise ValidationError(f"Invalid FileIO property {key}={value!r}: use true or false")
    return value == "true"


def file_io_properties(file_io: FileIO) -> dict[str, str]:
    """The properties that configure ``file_io`` (an :class:`ArrowFileIO`'s; none for another
    FileIO): what a Spark task needs to open the same files with ``ArrowFileIO(properties)``.
    They may hold credentials: never log or show them."""
    return file_io.properties if isinstance(file_io, ArrowFileIO) else {}


def is_local(location: str) -> bool:
    """Whether ``location`` is on this machine's file system: a plain path (or one with a
    Windows drive letter) or a ``file:`` URI.

    >>> is_local("/tmp/t/metadata/m.avro"), is_local("file:///tmp/m"), is_local("s3://b/m")
    (True, True, False)
    """
    return _local_scheme(urlsplit(location).scheme.lower())


def _local_scheme(scheme: str) -> bool:
    """Whether a location of this (lower-case) URI scheme is local: none, or a Windows drive
    letter, or ``file``."""
    return len(scheme) <= 1 or scheme == "file"


@dataclass(frozen=True, slots=True)
class _Resolved:
    fs: Any
    path: str  # the filesystem's path of the location
    local: bool
    secrets: tuple[str, ...] = ()  # values no error message may show


def storage_error(operation: str, location: str, error: OSError,
                  secrets: tuple[str, ...] = ()) -> StorageError:
    """The store's ``error`` as a :class:`StorageError` naming ``operation`` and
    ``location``, with any of ``secrets`` taken out of the store's reason (none is known to
    quote them: a precaution)."""
    reason = str(error).strip() or type(error).__name__
    for secret in secrets:
        reason = reason.replace(secret, "<secret>")
    return StorageError(operation, location, reason, error.errno)


@contextlib.contextmanager
def _storage(operation: str, location: str, secrets: tuple[str, ...] = ()) -> Iterator[None]:
    """A store's ``OSError`` (other than a missing file, or a file where a directory was to be
    listed, which callers handle) as a :func:`storage_error`."""
    try:
        yield
    except (IcebergError, FileNotFoundError, NotADirectoryError):
        raise
    except OSError as e:
        raise storage_error(operation, location, e, secrets) from None


class ArrowFileIO:
    """:class:`FileIO` on ``pyarrow.fs``; picklable (the filesystem cache is rebuilt).

    ``properties`` configure object stores (``s3.endpoint``, ``s3.access-key-id``,
    ``s3.secret-access-key``, ``s3.session-token``, ``s3.region``, ...); they are kept out of
    ``repr`` and error messages.
    """

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        self._properties = dict(properties or {})
        self._secrets = _secret_values(self._properties)
        self._lock = threading.Lock()
        # (scheme, netloc) -> (filesystem, whether its paths start with the netloc)
        self._filesystems: dict[tuple[str, str], tuple[Any, bool]] = {}

    def __repr__(self) -> str:
        return f"ArrowFileIO(<{len(self._properties)} properties>)"

    @property
    def properties(self) -> dict[str, str]:
        """The FileIO properties (a copy; they may hold credentials: do not log them)."""
        return dict(self._properties)

    def __getstate__(self) -> dict[str, Any]:
        return {"properties": self._properties}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._properties = dict(state["properties"])
        self._secrets = _secret_values(self._properties)
        self._lock = threading.Lock()
        self._filesystems = {}

    def new_input(self, location: str) -> ArrowInputFile:
        return ArrowInputFile(location, self._resolve(location))

    def new_output(self, location: str) -> ArrowOutputFile:
        return ArrowOutputFile(location, self._resolve(location))

    def exists(self, location: str) -> bool:
        return self.new_input(location).exists()

    def delete(self, location: str) -> None:
        """Delete a file. Deleting a missing file does nothing, as on object stores."""
        r = self._resolve(location)
        with _storage("delete", location, r.secrets), contextlib.suppress(FileNotFoundError):
            r.fs.delete_file(r.path)

    def rename(self, source: str, target: str) -> None:
        """Move a file that is not yet part of a table (``target`` must not exist; its
        directory is created): a rename on file systems that have one, a copy on object
        stores. Not in :class:`FileIO`: "Tables do not require rename"; only writers that
        use Spark's own file writer, which renames anyway, move their fresh files."""
        src, dst = self._resolve(source), self._resolve(target)
        if src.fs is not dst.fs:
            raise UnsupportedFeature(f"Cannot move {source} to {target}: another file system")
        if self.exists(target):
            raise AlreadyExists(f"Cannot move {source} to {target}: it already exists")
        parent = dst.path.rsplit("/", 1)[0]
        with _storage(f"move {source} to", target, dst.secrets):
            if dst.local:
                os.makedirs(parent, exist_ok=True)
            elif parent:
                dst.fs.create_dir(parent, recursive=True)
            src.fs.move(src.path, dst.path)

    def list_prefix(self, prefix: str) -> Iterator[FileInfo]:
        """Every file below the directory ``prefix``, recursively, sorted by location.

        A missing directory lists nothing. Locations are ``prefix`` plus the relative path.
        """
        r = self._resolve(prefix)
        base = r.path.rstrip("/")
        head = prefix.rstrip("/")
        selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
        with _storage("list", prefix, r.secrets):
            infos = [i for i in r.fs.get_file_info(selector) if i.type == pafs.FileType.File]
        for info in sorted(infos, key=lambda i: str(i.path)):
            relative = str(info.path)[len(base):]
            mtime = info.mtime_ns
            yield FileInfo(head + relative, int(info.size),
                           None if mtime is None else int(mtime) // 1_000_000)

    def list_directory(self, location: str) -> tuple[list[FileInfo], list[str]]:
        """The files directly in the directory ``location`` and the locations of its
        subdirectories (not recursive, not sorted), in ``location``'s spelling: one level of a
        walk that hands subdirectories to other workers. A missing directory lists nothing."""
        r = self._resolve(location)
        base, head = r.path.rstrip("/"), location.rstrip("/")
        selector = pafs.FileSelector(base, recursive=False, allow_not_found=True)
        files, dirs = [], []
        with _storage("list", location, r.secrets):
            listed = r.fs.get_file_info(selector)
        for info in listed:
            child = f"{head}{str(info.path)[len(base):]}"
            if info.type == pafs.FileType.Directory:
                dirs.append(child)
            elif info.type == pafs.FileType.File:
                mtime = info.mtime_ns
                files.append(FileInfo(child, int(info.size),
                                      None if mtime is None else int(mtime) // 1_000_000))
        return files, dirs

    def _resolve(self, location: str) -> _Resolved:
        parts = urlsplit(location)
        scheme = parts.scheme.lower()
        if _local_scheme(scheme):
            path = location if len(scheme) <= 1 else parts.path or "/"
            return _Resolved(_LOCAL, os.path.abspath(path), True)
        key = (scheme, parts.netloc)
        with self._lock:
            cached = self._filesystems.get(key)
            if cached is None:
                cached = self._filesystems[key] = self._new_filesystem(location, scheme,
                                                                       parts.netloc)
        fs, with_netloc = cached
        path = parts.path
        if with_netloc:
            path = f"{parts.netloc}{path}"
        return _Resolved(fs, path, False, self._secrets)

    def _new_filesystem(self, location: str, scheme: str, netloc: str) -> tuple[Any, bool]:
        if scheme in _S3_SCHEMES:
            with _storage("open the S3 file system of", location, self._secrets):
                return pafs.S3FileSystem(**s3_options(self._properties)), True
        try:
            fs, path = pafs.FileSystem.from_uri(location)
        except Exception as e:  # pyarrow raises ArrowInvalid for unknown schemes
            raise UnsupportedFeature(
                f"No file system for scheme {scheme!r} of {location}: {e}") from e
        return fs, bool(netloc) and str(path).startswith(netloc)


_LOCAL = pafs.LocalFileSystem()


def _secret_values(properties: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(v for k in _SECRETS if (v := properties.get(k)))


@dataclass(frozen=True, slots=True)
class ArrowInputFile:
    """:class:`InputFile` of :class:`ArrowFileIO`."""

    location: str
    _r: _Resolved

    def length(self) -> int:
        with _storage("measure", self.location, self._r.secrets):
            info = self._r.fs.get_file_info(self._r.path)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFound(self.location)
        return int(info.size)

    def exists(self) -> bool:
        with _storage("look for", self.location, self._r.secrets):
            return bool(self._r.fs.get_file_info(self._r.path).type != pafs.FileType.NotFound)

    def open(self) -> Any:
        with _storage("open", self.location, self._r.secrets):
            try:
                return self._r.fs.open_input_file(self._r.path)
            except FileNotFoundError:
                raise FileNotFound(self.location) from None
            except OSError:
                try:
                    missing = not self.exists()
                except StorageError:  # the store refuses that too: its refusal of the open
                    missing = False
                if missing:
                    raise FileNotFound(self.location) from None
                raise

    def read(self) -> bytes:
        with self.open() as f, _storage("read", self.location, self._r.secrets):
            return bytes(f.read())


@dataclass(frozen=True, slots=True)
class ArrowOutputFile:
    """:class:`OutputFile` of :class:`ArrowFileIO`.

    Local files get their parent directories created. On object stores, the existence check of
    ``create``/``write_exclusive`` and the write are two requests: two writers racing between
    them can both succeed (the last one wins). Commits that need a real compare-and-swap on an
    object store must use a catalog, not ``write_exclusive``.
    """

    location: str
    _r: _Resolved

    def _already_exists(self) -> AlreadyExists:
        return AlreadyExists(f"Cannot create {self.location}: it already exists")

    def create(self, overwrite: bool = False) -> Any:
        fs, path = self._r.fs, self._r.path
        with _storage("create", self.location, self._r.secrets):
            if self._r.local:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                if not overwrite:  # claim the name atomically, then write through pyarrow
                    try:
                        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                    except FileExistsError:
                        raise self._already_exists() from None
            elif not overwrite and fs.get_file_info(path).type != pafs.FileType.NotFound:
                raise self._already_exists()
            return fs.open_output_stream(path)

    def write(self, data: bytes, overwrite: bool = False) -> None:
        with _storage("write", self.location, self._r.secrets), self.create(overwrite) as out:
            out.write(data)  # an object store uploads as the stream closes: inside too

    def write_exclusive(self, data: bytes) -> None:
        """Publish ``data`` so that exactly one concurrent writer of this location wins.

        Local files: write a temporary file in the same directory, fsync it, then ``os.link``
        it to the target (which fails if the target exists; unlike ``rename`` it never
        replaces), then remove the temporary name. Readers never see a partial file. On file
        systems without hard links, fall back to ``O_CREAT | O_EXCL``. Object stores: see the
        class docstring's caveat.
        """
        if not self._r.local:
            self.write(data, overwrite=False)
            return
        with _storage("write", self.location):
            self._link_exclusive(data)

    def _link_exclusive(self, data: bytes) -> None:
        path = self._r.path
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                                   dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise self._already_exists() from None
            except OSError as e:
                if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                    raise
                self._write_excl(path, data)
            _fsync_dir(directory)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def _write_excl(self, path: str, data: bytes) -> None:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            raise self._already_exists() from None
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


def _fsync_dir(directory: str) -> None:
    """Make the new directory entry durable (best effort: not every OS can open a dir)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
