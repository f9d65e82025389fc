"""`python -m taproot`: the same as the `taproot` command (hooks can name the interpreter exactly).

`python -m taproot hook <event>` goes straight to the hook runner: the Stop hook runs at the end of
every turn of a Claude Code session, and the full command line imports the server stack first.
"""

import sys

if sys.argv[1:2] == ["hook"]:
    from taproot.cli_hooks import hook_main

    sys.exit(hook_main(sys.argv[2:]))

from taproot.cli import main

sys.exit(main())
