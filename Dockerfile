# argo-doctor: the CLI and `argo-doctor serve`, the remediation service of deploy/ (docs/remediation.md).
#
#   docker build -t ghcr.io/argo-doctor/argo-doctor:0.1.0 .
#
# Two stages on the same Python image, so that the virtualenv's interpreter links stay valid: the builder
# installs argo-doctor and its dependencies (wheels) into /opt/argo-doctor; the final image gets that folder
# only, no pip cache, no sources, no compiler. It runs as UID/GID 10001 and works with a read-only root
# filesystem (bytecode is compiled at build time; the service writes only under /tmp and /var/lib/argo-doctor).
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/argo-doctor
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN /opt/argo-doctor/bin/pip install --no-compile . \
 && /opt/argo-doctor/bin/pip uninstall --yes pip \
 && python -m compileall -q -j 0 /opt/argo-doctor

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="argo-doctor" \
      org.opencontainers.image.description="Diagnose Argo CD and Argo Rollouts; restart stuck Rollouts safely" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 argo-doctor \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin argo-doctor \
 && mkdir -p /etc/argo-doctor /var/lib/argo-doctor \
 && chown 10001:10001 /var/lib/argo-doctor
COPY --from=builder /opt/argo-doctor /opt/argo-doctor
ENV PATH=/opt/argo-doctor/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["argo-doctor"]
CMD ["--help"]
