"""The ``icepark`` Python data source: reader, writer, options and filter pushdown."""
