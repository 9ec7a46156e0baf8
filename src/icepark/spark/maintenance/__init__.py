"""Table maintenance as Spark jobs: compaction (rewrite_data_files), manifest and delete file
rewrites, orphan file removal, and column and partition statistics."""
