"""The command line: parses options, calls the rest, and turns errors into one line and an exit code. One module
per command (or group of commands), imported when its command runs; what they share is in `group` (the command
group, exit statuses, signals) and `common` (the options that read a cluster, the Snapshot of the inputs). A new
command is a new module named in `group.COMMANDS`."""

from argo_doctor.cli.group import _output_closed, main, run

__all__ = ["_output_closed", "main", "run"]
