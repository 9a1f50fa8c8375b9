"""Multi-party fusion by top-down specialization with hierarchical sensitivity.

Providers hold vertical partitions of one table (same record ids, the class
attribute shared); they specialize a common cut of the quasi-identifiers
round by round until no candidate keeps every anonymity template valid.
``config`` reads ``fusion.toml``, ``roles`` gives every column its role
(template columns are the quasi-identifiers; the others are named
identifying, sensitive or insensitive), ``channel`` defines what the engine needs
from the other parties (the ``Network`` protocol), ``engine`` is the one loop
both ``fuse`` and ``party`` run. A networked party talks through two layers:
the codec (``codec``: frames and control messages; ``messages``: the DATA
payloads), pure functions over bytes that refuse anything malformed with a
``ProtocolError``; and the connections (``transport``: TLS, the accept loop,
deadlines), with the MPyC secure maximum in ``secure_max`` and the party's
run in ``party``. The runs with their outputs are in :mod:`anonlab.runs.fusion`.
"""
