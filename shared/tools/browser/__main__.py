"""`python -m shared.tools.browser`: build the browser site (build.py)."""

import sys

from shared.tools.browser.build import main

sys.exit(main())
