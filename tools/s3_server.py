"""A throwaway S3 API endpoint on 127.0.0.1 for tests and benchmarks: moto's standalone
server (``moto[server]``, a test dependency), with request authentication on.

moto checks signatures only with IAM authentication enabled (``INITIAL_NO_AUTH_ACTION_COUNT``:
that many requests pass unauthenticated, then every request must be signed by a known key).
The first three requests make an IAM user, its allow-all policy and its access key; every
later request is signed with that key, so a wrong secret fails as on AWS
(``SignatureDoesNotMatch``/``AccessDenied``).

It needs moto 5.2.5 or later: earlier 5.2 releases answer ``CompleteMultipartUpload`` with the
root element ``CompleteMultipartUploadResponse`` instead of S3's
``CompleteMultipartUploadResult`` (getmoto/moto#10055). boto3 ignores the name, but the AWS
SDK for C++ inside pyarrow reads it as an error embedded in a 200 response
("CompletedMultipartUpload got error embedded in a 200 OK response", ``INTERNAL_FAILURE``),
and pyarrow uploads every file as a multipart upload, so every pyarrow write failed.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tools.ports import free_port, listening

REGION = "us-east-1"


@dataclass(frozen=True)
class S3Server:
    """The running endpoint and the one access key it accepts."""

    endpoint: str
    access_key: str
    secret_key: str = field(repr=False)

    def client(self) -> Any:
        """A boto3 S3 client of the endpoint (an independent view of the buckets)."""
        import boto3  # noqa: PLC0415 - a test dependency

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key)

    def properties(self, **overrides: str) -> dict[str, str]:
        """icepark FileIO properties (``s3.*``) for the endpoint, with ``overrides``."""
        return {"s3.endpoint": self.endpoint, "s3.region": REGION,
                "s3.access-key-id": self.access_key, "s3.secret-access-key": self.secret_key,
                "s3.path-style-access": "true", **overrides}

    def new_bucket(self) -> str:
        """A fresh, empty bucket's name."""
        name = f"icepark-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name


@contextlib.contextmanager
def s3_server() -> Iterator[S3Server]:
    """Start a server (its state in memory, its log in a temporary folder); stop it on exit."""
    import boto3  # noqa: PLC0415 - a test dependency

    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(("AWS_", "ICEPARK_"))}
    env["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"
    with tempfile.TemporaryDirectory(prefix="icepark-s3-") as root, \
            open(os.path.join(root, "moto.log"), "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
        try:
            deadline = time.monotonic() + 60
            while not listening(port):
                if process.poll() is not None or time.monotonic() > deadline:
                    with open(os.path.join(root, "moto.log"), errors="replace") as f:
                        raise RuntimeError(f"moto's S3 server did not listen on {port}:\n"
                                           f"{f.read()[-3000:]}")
                time.sleep(0.2)
            iam = boto3.client("iam", endpoint_url=endpoint, region_name=REGION,
                               aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
            iam.create_user(UserName="icepark")
            iam.put_user_policy(UserName="icepark", PolicyName="all", PolicyDocument=json.dumps(
                {"Version": "2012-10-17",
                 "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
            key = iam.create_access_key(UserName="icepark")["AccessKey"]
            yield S3Server(endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
