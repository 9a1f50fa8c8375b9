"""The app's pages: each module exposes ``ROUTES``, a list of Starlette routes."""
