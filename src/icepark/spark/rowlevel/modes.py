"""The two ways a row-level change is written, chosen per operation by a table property
(the reference implementation's names and default): ``write.delete.mode``,
``write.update.mode`` and ``write.merge.mode``.

* ``copy-on-write`` (the default): the data files holding changed rows are rewritten;
* ``merge-on-read``: the old rows are deleted by position (position delete files on v2,
  deletion vectors on v3) and new rows go to new files. Spec: "Row-level deletes are not
  supported in v1", so a v1 table cannot.

On v2, ``write.delete.granularity`` says how position deletes are grouped into files (the
reference implementation's name; its Spark writers default to ``file`` since Iceberg 1.8):
``file`` writes a delete file per data file, so that planning attaches to each data file only
the deletes of that file (spec: "Position delete metadata can use ``referenced_data_file`` when
all deletes tracked by the entry are in a single data file"); ``partition`` packs the deletes
of every data file of a partition into one file, fewer files for readers to open. v3 deletion
vectors are one per data file either way.
"""

from __future__ import annotations

from icepark.errors import ValidationError
from icepark.spec.metadata import TableMetadata

COPY_ON_WRITE = "copy-on-write"
MERGE_ON_READ = "merge-on-read"
DELETE_MODE = "write.delete.mode"
UPDATE_MODE = "write.update.mode"
MERGE_MODE = "write.merge.mode"
DELETE_GRANULARITY = "write.delete.granularity"
FILE_GRANULARITY = "file"
PARTITION_GRANULARITY = "partition"


def row_level_mode(metadata: TableMetadata, key: str) -> str:
    """The mode table property ``key`` sets: copy-on-write unless it says merge-on-read,
    which a v1 table cannot do (:class:`ValidationError`, as for any other value)."""
    raw = metadata.properties.get(key)
    mode = COPY_ON_WRITE if raw is None else raw.strip().lower()
    if mode not in (COPY_ON_WRITE, MERGE_ON_READ):
        raise ValidationError(f"Invalid table property {key}={raw!r}: use {COPY_ON_WRITE} or "
                              f"{MERGE_ON_READ}")
    if mode == MERGE_ON_READ and metadata.format_version < 2:
        raise ValidationError(
            f"Cannot use {key}={MERGE_ON_READ} on a v1 table: \"Row-level deletes are not "
            f"supported in v1\"; upgrade the table to v2 or use {COPY_ON_WRITE}")
    return mode


def delete_granularity(metadata: TableMetadata) -> str:
    """``write.delete.granularity``: ``file`` (the default) or ``partition``; any other value
    is a :class:`ValidationError`."""
    raw = metadata.properties.get(DELETE_GRANULARITY)
    granularity = FILE_GRANULARITY if raw is None else raw.strip().lower()
    if granularity not in (FILE_GRANULARITY, PARTITION_GRANULARITY):
        raise ValidationError(f"Invalid table property {DELETE_GRANULARITY}={raw!r}: use "
                              f"{FILE_GRANULARITY} or {PARTITION_GRANULARITY}")
    return granularity


__all__ = ["COPY_ON_WRITE", "DELETE_GRANULARITY", "DELETE_MODE", "FILE_GRANULARITY",
           "MERGE_MODE", "MERGE_ON_READ", "PARTITION_GRANULARITY", "UPDATE_MODE",
           "delete_granularity", "row_level_mode"]
