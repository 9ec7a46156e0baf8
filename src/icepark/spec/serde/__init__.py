"""JSON serialization of schemas, partition specs, sort orders, snapshots and table metadata.

STYLE rule 3: "The wire format stays at the edge." Every hyphenated JSON key and every
difference between format versions 1, 2 and 3 lives in this package; the models in
:mod:`icepark.spec` are version-neutral.

* :mod:`~icepark.spec.serde.types_json`: types and schemas (Appendix C, *Schemas*)
* :mod:`~icepark.spec.serde.specs_json`: partition specs and sort orders
* :mod:`~icepark.spec.serde.snapshots_json`: snapshots, refs, statistics files, logs
* :mod:`~icepark.spec.serde.metadata_json`: the table metadata file
"""

from icepark.spec.serde.metadata_json import (
    table_metadata_from_json,
    table_metadata_to_dict,
    table_metadata_to_json,
)
from icepark.spec.serde.snapshots_json import (
    ref_from_json,
    ref_to_json,
    snapshot_from_json,
    snapshot_to_json,
    statistics_file_from_json,
    statistics_file_to_json,
)
from icepark.spec.serde.specs_json import (
    partition_spec_from_json,
    partition_spec_to_json,
    sort_order_from_json,
    sort_order_to_json,
)
from icepark.spec.serde.types_json import (
    schema_from_json,
    schema_to_json,
    type_from_json,
    type_to_json,
)

__all__ = [
    "partition_spec_from_json",
    "partition_spec_to_json",
    "ref_from_json",
    "ref_to_json",
    "schema_from_json",
    "schema_to_json",
    "snapshot_from_json",
    "snapshot_to_json",
    "sort_order_from_json",
    "sort_order_to_json",
    "statistics_file_from_json",
    "statistics_file_to_json",
    "table_metadata_from_json",
    "table_metadata_to_dict",
    "table_metadata_to_json",
    "type_from_json",
    "type_to_json",
]
