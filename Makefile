# argo-doctor: `make demo` and `make test` work on a fresh machine (they create .venv first).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean postgres kubectl

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	@for bundle in $$(find examples -name bundle.yaml -printf '%h\n' | sort); do \
		echo "=== argo-doctor scan $$bundle"; \
		$(BIN)/argo-doctor scan $$bundle --fail-on never || exit $$?; \
	done

test: $(STAMP) postgres kubectl
	$(BIN)/pytest

# The audit store's PostgreSQL tests start a real server (tests/remediate/pgserver.py): install Debian's
# package when no server binary is found. create_main_cluster = false keeps the package from starting its own.
postgres:
	@if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		if [ "$$(id -u)" != 0 ]; then echo "PostgreSQL server missing: run as root: apt-get install -y postgresql" >&2; exit 1; fi; \
		mkdir -p /etc/postgresql-common/createcluster.d; \
		echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/argo-doctor.conf; \
		apt-get update -qq; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null; \
	fi

# tests/remediate/test_deploy.py renders deploy/ with `kubectl kustomize`; no registry here serves kubectl, so it
# must be on the machine (it is on this machine kind's image).
kubectl:
	@command -v kubectl >/dev/null 2>&1 || { echo "kubectl missing: the deploy/ tests render with kubectl kustomize" >&2; exit 1; }

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy src
	$(BIN)/lint-imports --no-cache

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
