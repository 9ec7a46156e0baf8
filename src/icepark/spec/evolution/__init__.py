"""Schema and partition evolution: pure builders that derive the next schema or partition spec."""
