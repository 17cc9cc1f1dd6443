"""``python -m aihw.cli``: the ``aihw`` command line."""

import sys

from aihw.cli import main

sys.exit(main())
