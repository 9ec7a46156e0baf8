"""v3 row lineage columns of the rows the Arrow reader returns.

Spec (v3), *Row lineage assignment*: "When a data file has a non-null ``first_row_id``, readers
must: Replace any null or missing ``_row_id`` with the data file's ``first_row_id`` plus the
row's ``_pos``; Replace any null or missing ``_last_updated_sequence_number`` to the data
file's ``data_sequence_number``; Read any non-null ``_row_id`` or
``_last_updated_sequence_number`` without modification", and "When a data file has a null
``first_row_id``, readers must produce null for ``_row_id`` and
``_last_updated_sequence_number``". A file stores the columns when a writer moved rows into it
("The row's existing non-null ``_row_id`` must be copied into the new data file"); they are
read by their reserved field IDs.

>>> import numpy as np, pyarrow as pa
>>> got = RowLineage({"_row_id": (None, None)}, first_row_id=100, data_sequence_number=7)
>>> got.arrays(pa.record_batch({"x": [1, 2]}), np.array([0, 5]), {})["_row_id"].to_pylist()
[100, 105]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icepark.io.arrow.projection import FileColumns, extract, repeat
from icepark.spec.reserved import LINEAGE_FIELDS, ROW_ID

ColumnReader = tuple[int | None, Any]
"""The top-level file column a value is read from (None: the file lacks it) and the function
reading it (see :func:`~icepark.io.arrow.projection.extract`)."""


def stored_lineage(columns: FileColumns, names: Sequence[str]) -> dict[str, ColumnReader] | None:
    """Readers of the lineage columns among ``names`` that the file stores, by name (a
    column the file lacks reads as ``(None, None)``); None if no lineage column is asked
    for."""
    wanted = [f for f in LINEAGE_FIELDS if f.name in names]
    if not wanted:
        return None
    return {f.name: extract(columns, f) if columns.path(f.field_id) is not None else (None, None)
            for f in wanted}


class RowLineage:
    """The lineage columns of one data file's rows: ``readers`` of what the file stores (see
    :func:`stored_lineage`), its inherited ``first_row_id`` and its data sequence number."""

    def __init__(self, readers: Mapping[str, ColumnReader], *, first_row_id: int | None,
                 data_sequence_number: int | None) -> None:
        self.readers = dict(readers)
        self.first_row_id = first_row_id
        self.data_sequence_number = data_sequence_number

    @property
    def tops(self) -> set[int]:
        """The top-level file columns the stored values are read from."""
        return {top for top, _ in self.readers.values() if top is not None}

    def arrays(self, batch: Any, positions: Any, index: Mapping[int, int]) -> dict[str, Any]:
        """The columns, by name, of the rows of ``batch`` at file ``positions`` (``index``:
        top-level file column -> its position in ``batch``)."""
        n = len(positions)
        out = {}
        for name, (top, read) in self.readers.items():
            if self.first_row_id is None:
                out[name] = pa.nulls(n, pa.int64())
                continue
            if name == ROW_ID.name:
                inherited = pa.array(positions + self.first_row_id, pa.int64())
            elif self.data_sequence_number is None:
                inherited = pa.nulls(n, pa.int64())
            else:
                inherited = repeat(pa.array([self.data_sequence_number], pa.int64()), n)
            if top is None:
                out[name] = inherited
            else:
                stored = pc.cast(read(batch.column(index[top])), pa.int64())
                out[name] = pc.coalesce(stored, inherited)
        return out
