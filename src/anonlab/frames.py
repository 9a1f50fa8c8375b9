"""What kind of table a value is, told without importing the library that would make it."""

from __future__ import annotations


def is_dask_frame(value: object) -> bool:
    """Whether ``value`` is a ``dask.dataframe.DataFrame`` (Dask is not imported to tell)."""
    return type(value).__module__.startswith("dask.") and hasattr(value, "to_delayed")
