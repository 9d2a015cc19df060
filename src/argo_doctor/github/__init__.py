"""GitHub, as Argo CD talks to it: the App installation-token check (`app`) and the JWT time-window
arithmetic that GitHub applies to an app's token request (`jwt_window`)."""
