"""`python -m shared.tools.mutants`: see cli.py."""

import sys

from shared.tools.mutants.cli import main

sys.exit(main())
