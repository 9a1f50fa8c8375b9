"""Mondrian multidimensional partitioning (LeFevre, DeWitt and Ramakrishnan, ICDE 2006):
the cuts on a frequency set (:mod:`anonlab.mondrian.partition`) and the release with its
figures (:mod:`anonlab.mondrian.method`); docs/mondrian.md."""
