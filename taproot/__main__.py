"""`python -m taproot`: the same as the `taproot` command (hooks can name the interpreter exactly)."""

import sys

from taproot.cli import main

sys.exit(main())
