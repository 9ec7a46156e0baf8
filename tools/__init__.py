"""Developer tools that run outside the ``icepark`` package (they may use the test-only peers)."""
