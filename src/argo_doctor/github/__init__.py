"""GitHub, as Argo CD talks to it: the App installation-token check (`app`) and the JWT time-window
arithmetic that GitHub applies to an app's token request (`jwt_window`)."""

DEFAULT_API_URL = "https://api.github.com"
"""GitHub's API (GitHub Enterprise Server serves it at https://HOST/api/v3)."""
