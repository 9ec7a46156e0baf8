"""icepark: Apache Iceberg tables on stock PySpark."""

__version__ = "0.1.0"
