"""Tables: changes (updates, requirements, the metadata builder), actions, planning."""
