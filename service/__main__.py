"""``python -m service``: the gostop command line."""

import sys

from .cli import main

sys.exit(main())
