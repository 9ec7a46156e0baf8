"""Run the icepark command: ``python -m icepark.cli``."""

import sys

from icepark.cli.main import main

sys.exit(main())
