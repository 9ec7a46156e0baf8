"""Where the test vectors from the Java and Rust implementations are.

They are not part of this repository: ``../shared/vectors/`` beside the checkout holds them (the
layout CI has). A checkout elsewhere names the folder with ``ICEPARK_VECTORS``::

    ICEPARK_VECTORS=/path/to/shared/vectors .ci/run

A missing folder fails the collection of the tests that read it, with this message, rather
than leaving them with nothing to check.
"""

from __future__ import annotations

import os
from pathlib import Path

VECTORS_VARIABLE = "ICEPARK_VECTORS"
ROOT = Path(__file__).resolve().parents[1]


def vectors(*parts: str) -> Path:
    """The vectors folder (``ICEPARK_VECTORS``, else ``../shared/vectors`` beside the
    checkout) joined with ``parts``; ``FileNotFoundError`` saying how to point at it when
    the folder is not there."""
    base = Path(os.environ.get(VECTORS_VARIABLE) or ROOT.parent / "shared" / "vectors")
    path = base.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(
            f"test vectors not found at {path}: check out the project beside shared/ (the CI "
            f"layout) or set {VECTORS_VARIABLE} to the vectors folder")
    return path
