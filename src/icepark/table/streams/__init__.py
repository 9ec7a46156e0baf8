"""Tables as streams: exactly-once streaming commits and offsets for streaming reads."""
