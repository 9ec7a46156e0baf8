"""Snapshot producers: append, overwrite, delete, rewrite and row delta, their validation and
summaries.
"""
