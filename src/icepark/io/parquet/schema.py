"""The Iceberg schema of an existing Parquet file, for creating a table that fits it.

A file written by another tool usually has no field IDs, and a file of another table has IDs
that mean nothing in a new one; either way the new table gets fresh IDs. Spec, *Schema
Evolution*: "Adding a new field assigns a new ID for that field and for any nested fields."
"""

from __future__ import annotations

from icepark.io.arrow.parquet_file import read_arrow_schema
from icepark.io.arrow.schema import infer_schema
from icepark.io.fileio import ArrowFileIO, FileIO
from icepark.spec.schema import Schema


def parquet_schema(location: str, file_io: FileIO | None = None) -> Schema:
    """The schema of the Parquet file at ``location`` with fresh field IDs from 1.

    Columns whose Arrow type has no Iceberg counterpart raise
    :class:`~icepark.errors.ValidationError` naming the column; a file that is not Parquet
    :class:`~icepark.errors.CorruptFile` naming the file.
    """
    with (file_io or ArrowFileIO()).new_input(location).open() as stream:
        return infer_schema(read_arrow_schema(stream, location, "Parquet file"))
