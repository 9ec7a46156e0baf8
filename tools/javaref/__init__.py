"""The Java reference runtime (Apache Iceberg 1.10.2 on Spark 3.5) as a test peer."""
