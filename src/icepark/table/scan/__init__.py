"""Scan planning: choosing a snapshot, the manifest planner, delete index, tasks, and reading
rows.
"""
