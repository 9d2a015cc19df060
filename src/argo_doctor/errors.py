"""The small error hierarchy of argo-doctor; the CLI turns each into one line and an exit code."""

from __future__ import annotations


class ArgoDoctorError(Exception):
    """Base of every error argo-doctor raises on purpose."""

    exit_code = 2


class InputError(ArgoDoctorError):
    """An input the user named cannot be read at all (a missing path, a FIFO or a device, not a tar archive);
    the commands raise it only when no input can be read."""


class ConfigError(ArgoDoctorError):
    """An option or configuration value is invalid."""


class StoreError(ArgoDoctorError):
    """The audit store cannot be opened, read or written; the message is one line naming the store (never its
    password)."""
