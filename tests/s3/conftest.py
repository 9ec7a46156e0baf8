"""One S3 API endpoint for the run (:mod:`tools.s3_server`: moto's standalone server on
127.0.0.1, request signatures checked), started once per test session and stopped at the
end, and a fresh bucket per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tools.s3_server import S3Server
from tools.s3_server import s3_server as start_server

__all__ = ["S3Server"]


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    with start_server() as server:
        yield server


@pytest.fixture
def bucket(s3_server: S3Server) -> str:
    """A fresh, empty bucket."""
    return s3_server.new_bucket()
