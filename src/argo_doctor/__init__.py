"""argo-doctor: find out why Argo CD misbehaves, with evidence, and fix what is safe to fix."""

__version__ = "0.1.0"
