"""What Argo CD's messages say about a managed cluster: whether it refused Argo CD's credentials (client-go's answer
to a 401, the exec credential plugin's failure, an expired certificate)."""

from __future__ import annotations

import re

from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import as_list, mapping

REFUSED = re.compile(r"the server has asked for the client to provide credentials|\bUnauthorized\b|"
                     r"getting credentials: exec|token has expired|certificate has expired", re.I)
LIVE_STATE = "Failed to load live state: "
"""The controller's prefix for a condition about the destination cluster (controller/state.go)."""


def credentials_refused(message: str) -> bool:
    """Whether a message says a cluster refused Argo CD's credentials."""
    return REFUSED.search(message) is not None


def refused_conditions(app: Obj) -> list[tuple[int, str]]:
    """(index, message) of an Application's conditions that say its destination refused Argo CD's credentials."""
    found = []
    for index, cond in enumerate(as_list(app.status.get("conditions"))):
        message = str(mapping(cond).get("message") or "")
        if message.startswith(LIVE_STATE) and credentials_refused(message):
            found.append((index, message))
    return found
