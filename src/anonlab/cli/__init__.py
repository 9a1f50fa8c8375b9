"""The ``anonlab`` command line: one sub-command per job, each in its own module."""
