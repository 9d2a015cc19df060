"""Health statuses and their ordering (gitops-engine healthOrder / IsWorse)."""

from __future__ import annotations

from argo_doctor.health import Health, HealthStatus, is_worse, worst


def test_values_are_argo_cd_spellings() -> None:
    assert [s.value for s in HealthStatus] == [
        "Healthy",
        "Progressing",
        "Degraded",
        "Suspended",
        "Missing",
        "Unknown",
    ]
    assert HealthStatus("Degraded") is HealthStatus.DEGRADED
    assert isinstance(HealthStatus.HEALTHY, str) and HealthStatus.HEALTHY.value == "Healthy"
    assert Health(HealthStatus.HEALTHY) == Health(HealthStatus.HEALTHY, "")


def test_is_worse_follows_health_order() -> None:
    assert is_worse(HealthStatus.HEALTHY, HealthStatus.PROGRESSING)
    assert is_worse(HealthStatus.HEALTHY, HealthStatus.DEGRADED)
    assert not is_worse(HealthStatus.DEGRADED, HealthStatus.PROGRESSING)
    assert is_worse(HealthStatus.SUSPENDED, HealthStatus.PROGRESSING)
    assert is_worse(HealthStatus.MISSING, HealthStatus.DEGRADED)
    assert is_worse(HealthStatus.DEGRADED, HealthStatus.UNKNOWN)


def test_worst() -> None:
    s = HealthStatus
    assert worst([]) is s.HEALTHY
    assert worst([s.HEALTHY, s.SUSPENDED]) is s.SUSPENDED
    assert worst([s.SUSPENDED, s.PROGRESSING, s.HEALTHY]) is s.PROGRESSING
    assert worst([s.MISSING, s.PROGRESSING]) is s.MISSING
    assert worst([s.DEGRADED, s.MISSING]) is s.DEGRADED  # the docs' example: Missing + Degraded
    assert worst(iter([s.UNKNOWN, s.DEGRADED])) is s.UNKNOWN
