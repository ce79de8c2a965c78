"""``python -m gostop``: the ``gostop`` command."""

import sys

from gostop.tools.cli import main

sys.exit(main())
