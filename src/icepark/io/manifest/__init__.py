"""Manifests and manifest lists: their Avro layouts, writing them, and reading them fast."""
