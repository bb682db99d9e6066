"""`python3 -P -m newt.local.setup ...`: the command line of cli.py."""

import sys

from .cli import main

sys.exit(main())
