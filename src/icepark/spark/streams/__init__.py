"""Streams in Spark: exactly-once ``foreachBatch`` writes and changelog reads."""
