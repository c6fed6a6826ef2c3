"""`python -m netloom.cli` is the `netloom` command too."""

import sys

from netloom.cli import main

sys.exit(main())
