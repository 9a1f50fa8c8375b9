"""``python -m anonlab`` runs the command line."""

from anonlab.cli.app import main

main()
