"""Spark writes: data files written in the tasks (Spark's writer or icepark's), one commit."""
