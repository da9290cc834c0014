"""git-checkout-helper: git's parallel checkout, in Python.

The helper (``git checkout--helper``) speaks the wire of git's own
``checkout--worker``; the coordinator (``git parallel-checkout``,
``git parallel-clone``) plans a checkout and drives N helpers.
"""

__version__ = "0.1.0"
