"""Multi-party fusion by top-down specialization with hierarchical sensitivity.

Providers hold vertical partitions of one table (same record ids, the class
attribute shared); they specialize a common cut of the quasi-identifiers
round by round until no candidate keeps every anonymity template valid.
``config`` reads ``fusion.toml``, ``channel`` defines how parties talk,
``messages`` what they send, ``engine`` the one loop both ``fuse`` and
``party`` run.
"""
