"""``python -m git_checkout_helper.bench``: see the package docstring."""

import sys

from . import main

sys.exit(main())
