"""Metadata tables: a table's snapshots, history, refs, manifests, files, entries and partitions."""
