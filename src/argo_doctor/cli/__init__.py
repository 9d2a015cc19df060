"""The command line: parses options, calls the rest, and turns errors into one line and an exit code. One module
per command (or group of commands); what they share is in `group` (the command group, exit statuses, signals) and
`common` (the options that read a cluster, the Snapshot of the inputs). A new command is a new module imported
here and named in `group.ORDER`."""

from argo_doctor.cli import (  # noqa: F401  (each module adds its command to `main`)
    audit,
    collect,
    completion,
    deprecations,
    fix,
    github_app,
    health,
    helm_check,
    lua,
    map,
    notifications_config,
    rbac,
    redact,
    rules,
    scan,
    serve,
    timeline,
    upgrade_check,
)
from argo_doctor.cli.group import _output_closed, main, run

__all__ = ["_output_closed", "main", "run"]
