"""Run the icepark command: ``python -m icepark`` is ``icepark``."""

import sys

from icepark.cli.main import main

sys.exit(main())
