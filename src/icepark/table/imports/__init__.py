"""Bringing existing Parquet files into Iceberg tables: add files, and the table a directory
of them makes."""
