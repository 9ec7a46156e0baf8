"""The Puffin footer: its layout and its JSON payload, the only place that knows either.

Spec, *File structure*: a Puffin file is ``Magic Blob1 Blob2 ... BlobN Footer``, where "Magic
is four bytes 0x50, 0x46, 0x41, 0x31"; *Footer structure*: the footer is ``Magic FooterPayload
FooterPayloadSize Flags Magic``, with "FooterPayloadSize: a length in bytes of the
FooterPayload (after compression, if compressed), stored as 4 byte integer" and "Flags: 4
bytes for boolean flags", of which only "byte 0 (first) bit 0 (lowest bit): whether
FooterPayload is compressed" is defined. "A 4 byte integer is always signed, in a two's
complement representation, stored little-endian."

>>> from icepark.io.puffin.metadata import BlobMetadata, FileMetadata
>>> blob = BlobMetadata("deletion-vector-v1", (2147483645,), -1, -1, 4, 40,
...                     properties={"cardinality": "3"})
>>> payload = encode_payload(FileMetadata((blob,), {"created-by": "icepark"}))
>>> payload.decode()[:80]
'{"blobs":[{"type":"deletion-vector-v1","fields":[2147483645],"snapshot-id":-1,"s'
>>> decode_payload(payload, "f.puffin").blobs == (blob,)
True
>>> footer = encode_footer(FileMetadata(()))
>>> footer, decode_tail(footer[-TAIL_LENGTH:], "f.puffin")
(b'PFA1{"blobs":[]}\\x0c\\x00\\x00\\x00\\x00\\x00\\x00\\x00PFA1', (12, False))
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import Any

from icepark.errors import CorruptFile
from icepark.io.puffin.codec import Codec, compress, decompress
from icepark.io.puffin.metadata import BlobMetadata, FileMetadata

MAGIC = b"\x50\x46\x41\x31"
"""Spec: "Magic is four bytes 0x50, 0x46, 0x41, 0x31 (short for: Puffin Fratercula arctica,
version 1)"."""
TAIL_LENGTH = 12
"""``FooterPayloadSize Flags Magic``: the fixed-length end of the footer."""
MIN_FOOTER_LENGTH = len(MAGIC) + TAIL_LENGTH
MIN_FILE_LENGTH = len(MAGIC) + MIN_FOOTER_LENGTH
"""A file with no blobs and an empty footer payload."""
FOOTER_COMPRESSED = 0x01
"""Flags, "byte 0 (first) bit 0 (lowest bit): whether FooterPayload is compressed"."""
FOOTER_CODEC = Codec.LZ4
"""Spec: "Footer payload bytes is either uncompressed or LZ4-compressed (as a single LZ4
compression frame with content size present)"."""
_TAIL = struct.Struct("<i4s4s")
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def encode_footer(metadata: FileMetadata, compressed: bool = False) -> bytes:
    """The whole footer: ``Magic FooterPayload FooterPayloadSize Flags Magic``."""
    payload = encode_payload(metadata)
    if compressed:
        payload = compress(FOOTER_CODEC, payload)
    flags = bytes((FOOTER_COMPRESSED if compressed else 0, 0, 0, 0))
    return MAGIC + payload + _TAIL.pack(len(payload), flags, MAGIC)


def decode_tail(tail: bytes, location: str) -> tuple[int, bool]:
    """The payload size and whether the payload is compressed, from the footer's last
    ``TAIL_LENGTH`` bytes.

    Flags other than "whether FooterPayload is compressed" are "reserved for future use and
    should be set to 0 on write": a file that sets one is refused, as its footer may mean
    something this reader does not know.
    """
    size, flags, magic = _TAIL.unpack(tail)
    if magic != MAGIC:
        raise CorruptFile(f"Puffin file {location}: bad magic at the end of the file: "
                          f"{magic.hex()}, expected {MAGIC.hex()}")
    if size < 0:
        raise CorruptFile(f"Puffin file {location}: negative footer payload size {size}")
    unknown = int.from_bytes(flags, "little") & ~FOOTER_COMPRESSED
    if unknown:
        raise CorruptFile(f"Puffin file {location}: footer flags {flags.hex()} set reserved "
                          f"bits (mask {unknown:#010x}); only bit 0 of byte 0 (compressed "
                          "footer payload) is defined")
    return size, bool(flags[0] & FOOTER_COMPRESSED)


def decode_footer(footer: bytes, location: str, compressed: bool) -> FileMetadata:
    """The file metadata of a whole footer whose tail :func:`decode_tail` read."""
    if footer[:len(MAGIC)] != MAGIC:
        raise CorruptFile(f"Puffin file {location}: bad magic at the start of the footer: "
                          f"{footer[:len(MAGIC)].hex()}, expected {MAGIC.hex()}")
    payload = footer[len(MAGIC):-TAIL_LENGTH]
    if compressed:
        payload = decompress(FOOTER_CODEC, payload, f"Puffin file {location}: footer payload")
    return decode_payload(payload, location)


def encode_payload(metadata: FileMetadata) -> bytes:
    """The footer's JSON, compact; ``compression-codec`` and empty ``properties`` omitted as
    the reference writer omits them."""
    doc: dict[str, Any] = {"blobs": [_blob_json(b) for b in metadata.blobs]}
    if metadata.properties:
        doc["properties"] = dict(metadata.properties)
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def _blob_json(blob: BlobMetadata) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "type": blob.type, "fields": list(blob.fields), "snapshot-id": blob.snapshot_id,
        "sequence-number": blob.sequence_number, "offset": blob.offset, "length": blob.length}
    if blob.compression_codec is not None:
        doc["compression-codec"] = blob.compression_codec
    if blob.properties:
        doc["properties"] = dict(blob.properties)
    return doc


def decode_payload(payload: bytes, location: str) -> FileMetadata:
    """The ``FileMetadata`` of an uncompressed footer payload; :class:`CorruptFile` naming
    ``location`` and the fault if it is not UTF-8 JSON of the spec's shape."""
    where = f"Puffin file {location}: footer payload"
    try:
        doc = json.loads(payload.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise CorruptFile(f"{where} is not UTF-8: {e}") from None
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        raise CorruptFile(f"{where} is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise CorruptFile(f"{where} is not a JSON object (FileMetadata)")
    blobs = _required(doc, "blobs", where)
    if not isinstance(blobs, list):
        raise CorruptFile(f"{where}: 'blobs' is not a list")
    return FileMetadata(tuple(_blob(b, f"{where}: blob {i}") for i, b in enumerate(blobs)),
                        _string_map(doc, where))


def _blob(doc: Any, where: str) -> BlobMetadata:
    if not isinstance(doc, dict):
        raise CorruptFile(f"{where} is not a JSON object (BlobMetadata)")
    blob_type = _required(doc, "type", where)
    if not isinstance(blob_type, str):
        raise CorruptFile(f"{where}: 'type' is not a string")
    fields = _required(doc, "fields", where)
    if not isinstance(fields, list) or not all(_is_int(f, _INT32) for f in fields):
        raise CorruptFile(f"{where}: 'fields' is not a list of ints")
    codec = doc.get("compression-codec")
    if codec is not None and not isinstance(codec, str):
        raise CorruptFile(f"{where}: 'compression-codec' is not a string")
    offset, length = _long(doc, "offset", where), _long(doc, "length", where)
    if offset < 0 or length < 0:
        raise CorruptFile(f"{where}: negative offset {offset} or length {length}")
    return BlobMetadata(blob_type, tuple(fields), _long(doc, "snapshot-id", where),
                        _long(doc, "sequence-number", where), offset, length, codec,
                        _string_map(doc, where))


def _required(doc: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in doc:
        raise CorruptFile(f"{where}: required {key!r} is missing")
    return doc[key]


def _is_int(value: Any, bounds: tuple[int, int]) -> bool:
    return type(value) is int and bounds[0] <= value <= bounds[1]


def _long(doc: Mapping[str, Any], key: str, where: str) -> int:
    value = _required(doc, key, where)
    if not _is_int(value, _INT64):
        raise CorruptFile(f"{where}: {key!r} is not a long: {value!r}")
    return int(value)


def _string_map(doc: Mapping[str, Any], where: str) -> dict[str, str]:
    """``properties``: "JSON object with string property values", optional."""
    value = doc.get("properties", {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise CorruptFile(f"{where}: 'properties' is not a JSON object of strings")
    return value
