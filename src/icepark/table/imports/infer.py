"""The table a directory of Parquet files makes: its schema from the files' columns, its
partition spec from their ``key=value`` directories.

The columns of all files are combined by name (a column some file lacks becomes optional, as
its rows read null there: "If a field id is missing from a data file, its value for each row
should be null"); files that disagree on a column's type are refused, naming two of them.
Files without field IDs give the table fresh IDs, as a new table gets ("Adding a new field
assigns a new ID for that field and for any nested fields"), and are read through the table's
name mapping; files that carry field IDs keep theirs, since readers resolve their columns by
those IDs ("Columns in Iceberg data files are selected by field id"). A directory mixing both
kinds is refused.

Every file must sit in the same ``key=value`` directory levels; each key becomes an identity
partition, on the file column of that name or, when the files do not hold it (Hive's layout), on
a new column at the end of the schema, typed from the directory values
(:func:`icepark.table.imports.partition_text.infer_type`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from icepark.errors import UnsupportedFeature, ValidationError
from icepark.io.arrow.name_mapping import has_field_ids
from icepark.io.arrow.schema import (
    field_metadata,
    from_arrow_schema,
    infer_schema,
    to_arrow_type,
)
from icepark.io.fileio import FileIO
from icepark.spec.partitioning import PartitionSpec, PartitionSpecBuilder
from icepark.spec.schema import Schema
from icepark.table.imports.add_files import FOOTER_THREADS
from icepark.table.imports.data_file import check_timestamps, read_footer
from icepark.table.imports.partition_text import infer_type
from icepark.table.imports.sources import SourceFile
from icepark.table.scan.tasks import parallel_map


@dataclass(frozen=True, slots=True)
class InferredTable:
    """A new table's schema and partition spec (bound to that schema)."""

    schema: Schema
    spec: PartitionSpec


def infer_table(file_io: FileIO, sources: Sequence[SourceFile], where: str,
                threads: int = FOOTER_THREADS) -> InferredTable:
    """The schema and spec of a table of ``sources`` (found under ``where``, named in errors);
    see the module docstring."""
    keys = _partition_keys(sources, where)
    schemas: dict[Any, str] = {}  # each distinct Arrow schema -> a file that has it
    read = parallel_map(lambda s: (s.location, read_footer(file_io, s.location)),
                        sources, min(threads, max(1, len(sources))))
    for location, footer in read:
        schemas.setdefault(footer.schema.to_arrow_schema(), location)
    for arrow_schema, location in schemas.items():
        check_timestamps(arrow_schema, location)
    with_ids = [loc for s, loc in schemas.items() if has_field_ids(s)]
    without = [loc for s, loc in schemas.items() if not has_field_ids(s)]
    if with_ids and without:
        raise ValidationError(f"Cannot make one table of {where}: {with_ids[0]} has Parquet "
                              f"field IDs and {without[0]} has none")
    combined = _combine(schemas, where)
    try:
        next_id = from_arrow_schema(combined).highest_field_id + 1 if with_ids else 1
        for key in keys:
            if key not in combined.names:
                t = to_arrow_type(infer_type({s.directory(key) or "" for s in sources}))
                combined = combined.append(pa.field(key, t, nullable=True,
                                                    metadata=field_metadata(next_id)))
                next_id += 1
        schema = from_arrow_schema(combined) if with_ids else infer_schema(combined)
    except (ValidationError, UnsupportedFeature) as e:
        raise ValidationError(f"Cannot make a table of {where}: {e}") from None
    builder = PartitionSpecBuilder(schema)
    for key in keys:
        builder.identity(key)
    return InferredTable(schema, builder.build())


def _partition_keys(sources: Sequence[SourceFile], where: str) -> tuple[str, ...]:
    """The keys of the files' ``key=value`` directories, the same for every file."""
    first = sources[0]
    keys = tuple(k for k, _ in first.directories)
    for source in sources[1:]:
        theirs = tuple(k for k, _ in source.directories)
        if theirs != keys:
            raise ValidationError(
                f"Cannot make one table of {where}: its files are not partitioned alike "
                f"({first.location} is in directories {_shown(keys)}, {source.location} in "
                f"{_shown(theirs)})")
    if len(set(keys)) != len(keys):
        raise ValidationError(f"Cannot make a table of {where}: {first.location} is in two "
                              f"directories of one key ({_shown(keys)})")
    return keys


def _shown(keys: tuple[str, ...]) -> str:
    return "/".join(f"{k}=..." for k in keys) or "none"


def _combine(schemas: dict[Any, str], where: str) -> Any:
    """The files' columns combined by name; a top-level column some file lacks is optional."""
    distinct = list(schemas)
    try:
        combined = pa.unify_schemas(distinct)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        files = list(schemas.values())
        raise ValidationError(f"Cannot make one table of {where}: the columns of its files do "
                              f"not agree (e.g. {files[0]} and {files[-1]}): {e}") from None
    for i, f in enumerate(combined):
        if not f.nullable and any(f.name not in s.names for s in distinct):
            combined = combined.set(i, f.with_nullable(True))
    return combined
