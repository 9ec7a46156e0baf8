"""Changes as data: updates and requirements, the metadata builder, commits, metadata-only
changes.
"""
