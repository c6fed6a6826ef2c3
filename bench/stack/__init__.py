"""The bench stacks' settings, URLs and WSGI callable (bench-only: the tests never load them)."""
