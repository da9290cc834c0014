"""``python -m bench``: see the package docstring."""

import sys

from . import main

sys.exit(main())
