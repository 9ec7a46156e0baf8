"""Connections to the peer engines we check interoperability against (one copy, in tools/)."""

from __future__ import annotations

from tools.peers import duckdb_connection

__all__ = ["duckdb_connection"]
