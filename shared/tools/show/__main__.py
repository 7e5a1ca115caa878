"""``python -m shared.tools.show STAGE|all [options]``: the step-through page (``nox -s show``)."""

import sys

from shared.tools.show.command import main

if __name__ == "__main__":
    sys.exit(main())
