"""Avro: Iceberg schemas as Avro schemas, generated decoders, the columnar encoder, container
files.
"""
