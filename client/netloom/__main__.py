"""`python -m netloom` is the `netloom` command."""

import sys

from netloom.cli import main

sys.exit(main())
