"""Reserved field IDs: the columns of position delete files and the row lineage fields.

Spec, *Reserved Field IDs*: "Iceberg tables must not use field ids greater than 2147483447
(``Integer.MAX_VALUE - 200``). This id range is reserved for metadata columns that can be used
in user data schemas, like the ``_file`` column that holds the file path in which a row was
stored." The position delete file's columns are among them (*Position Delete Files*):
``2147483546 file_path``, ``2147483545 pos`` and ``2147483544 row``; and v3 row lineage
(*Row Lineage*): "``_row_id`` a unique long identifier for every row within the table" and
"``_last_updated_sequence_number`` the sequence number of the commit that last updated a row",
``2147483540`` and ``2147483539``, which writers that move rows store in data files.

>>> FILE_PATH.field_id, POS.field_id, ROW_FIELD_ID
(2147483546, 2147483545, 2147483544)
>>> ROW_ID.field_id, LAST_UPDATED_SEQUENCE_NUMBER.field_id
(2147483540, 2147483539)
"""

from __future__ import annotations

from icepark.errors import ValidationError
from icepark.spec.schema import Schema
from icepark.spec.types import LONG, STRING, NestedField

FILE_PATH = NestedField.required(
    2147483546, "file_path", STRING,
    "Full URI of a data file with FS scheme. This must match the file_path of the target data "
    "file in a manifest entry")
POS = NestedField.required(
    2147483545, "pos", LONG,
    "Ordinal position of a deleted row in the target data file identified by file_path, "
    "starting at 0")
ROW_FIELD_ID = 2147483544
ROW_ID = NestedField.optional(
    2147483540, "_row_id", LONG,
    "A unique long assigned for row lineage")
LAST_UPDATED_SEQUENCE_NUMBER = NestedField.optional(
    2147483539, "_last_updated_sequence_number", LONG,
    "The sequence number which last updated this row")
LINEAGE_FIELDS = (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)


def with_lineage(schema: Schema) -> Schema:
    """``schema`` with the row lineage fields last: the columns of data files a writer writes
    when it moves existing rows ("When an existing row is moved to a different data file for
    any reason, writers should write ``_row_id`` and ``_last_updated_sequence_number``").

    >>> [f.name for f in with_lineage(Schema.of(NestedField.required(1, "id", LONG))).fields]
    ['id', '_row_id', '_last_updated_sequence_number']
    """
    clash = [f.name for f in LINEAGE_FIELDS if schema.as_struct().field_by_name(f.name)]
    if clash:
        raise ValidationError(f"Column {clash[0]!r} has the name of a row lineage metadata "
                              "column; rename it before moving rows of this format version 3 "
                              "table")
    return Schema((*schema.fields, *LINEAGE_FIELDS), schema.schema_id,
                  schema.identifier_field_ids)
