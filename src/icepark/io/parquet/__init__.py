"""Parquet files: data and delete file writers, column metrics from footers, schemas of existing
files.
"""
