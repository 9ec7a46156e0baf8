"""Row-level operations through Spark: deletes (copy-on-write and merge-on-read)."""
