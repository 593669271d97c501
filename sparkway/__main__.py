"""``python -m sparkway``: the ``sparkway`` command (``sparkway.cli``)."""

import sys

from sparkway.cli import main

sys.exit(main())
