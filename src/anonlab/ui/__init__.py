"""The local web app (``anonlab ui``): forms over the same settings models and runs as the CLI.

Layout: :mod:`anonlab.ui.server` starts it (uvicorn on 127.0.0.1, a token in the
URL); :mod:`anonlab.ui.app` builds the Starlette application from the page modules
named in ``PAGES``; :mod:`anonlab.ui.security` refuses any request without the
token or with a foreign ``Host``; :mod:`anonlab.ui.workspace` holds the session's
state (loaded tables, roles, hierarchies) in a private folder removed at exit;
:mod:`anonlab.ui.jobs` runs a settings model in a thread with progress and cancel;
:mod:`anonlab.ui.templating` renders the pages. Each page module under
:mod:`anonlab.ui.pages` exposes ``ROUTES``. The app needs the optional ``ui`` extra
(``pip install "anonlab[ui]"``).
"""
