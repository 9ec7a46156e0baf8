"""File IO and the Avro encodings of manifests and manifest lists."""
