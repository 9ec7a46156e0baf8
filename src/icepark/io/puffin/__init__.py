"""Puffin files: blobs with a JSON footer (codec, metadata, footer, writer, reader), and the
``deletion-vector-v1`` blob of v3 deletion vectors (bitmap, deletion_vector)."""
