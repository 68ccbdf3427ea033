"""``python -m irmodels`` runs the command-line interface."""

import sys

from irmodels.cli import main

sys.exit(main())
