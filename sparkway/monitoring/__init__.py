"""What a run is doing, for people and for scrapers: the step loop records its numbers in a
``RunStats`` (``stats.py``); the terminal's live view (``dashboard.py``) and the HTTP
endpoints ``/status`` and ``/metrics`` (``http.py``) show them."""
