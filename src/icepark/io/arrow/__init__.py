"""Arrow: schemas with field IDs, transforms and expressions as Arrow kernels, name mapping, the
reader.
"""
