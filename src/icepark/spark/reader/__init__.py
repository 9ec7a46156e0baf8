"""Spark reads: Spark's own Parquet reader by field ID, with deletes applied as anti-joins."""
