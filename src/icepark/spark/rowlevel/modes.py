"""The two ways a row-level change is written, chosen per operation by a table property
(the reference implementation's names and default): ``write.delete.mode``,
``write.update.mode`` and ``write.merge.mode``.

* ``copy-on-write`` (the default): the data files holding changed rows are rewritten;
* ``merge-on-read``: the old rows are deleted by position (position delete files on v2,
  deletion vectors on v3) and new rows go to new files. Spec: "Row-level deletes are not
  supported in v1", so a v1 table cannot.
"""

from __future__ import annotations

from icepark.errors import ValidationError
from icepark.spec.metadata import TableMetadata

COPY_ON_WRITE = "copy-on-write"
MERGE_ON_READ = "merge-on-read"
DELETE_MODE = "write.delete.mode"
UPDATE_MODE = "write.update.mode"
MERGE_MODE = "write.merge.mode"


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


__all__ = ["COPY_ON_WRITE", "DELETE_MODE", "MERGE_MODE", "MERGE_ON_READ", "UPDATE_MODE",
           "row_level_mode"]
