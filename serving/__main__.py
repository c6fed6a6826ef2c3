"""`python -m serving`: the local multi-model server (serving.registry_link, serving.server)."""

from .registry_link import main

main()
