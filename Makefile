# handwire — the commands a newcomer needs. `make run` and `make test` first;
# `make help` lists them all.
CARGO ?= cargo
# Extra arguments for the run targets, e.g. make run-router ARGS='--addr :8001 --trace'
ARGS ?=
# DEVELOPMENT ONLY secret for `make run-auth`. Never use it anywhere real:
# set TOKEN_AUTH_SECRET yourself (at least 32 random bytes) outside local demos.
DEV_TOKEN_AUTH_SECRET := dev-only-INSECURE-secret-change-me-0123456789
# The databases `make run` (config.yaml: data.database.source) and
# `make run-auth` (token-auth's default --db) create, with SQLite's WAL files.
DEMO_DATABASES := greeter.db greeter.db-wal greeter.db-shm token-auth.db token-auth.db-wal token-auth.db-shm
# Where `make grpcurl` links grpcurl (on PATH with rustup) and keeps its venv.
CARGO_BIN ?= $(or $(CARGO_HOME),$(HOME)/.cargo)/bin
GRPCURL_VENV ?= $(HOME)/.local/share/handwire/grpcurl-venv
# The venv of the Markdown check in `make lint` (markdown-it-py, CommonMark).
LINT_VENV := target/lint-venv

.PHONY: help run run-router run-auth reset grpcurl test test-cluster test-grpcurl test-gin demo lint lint-docs bench load instructions soak fuzz build clean

## List the commands
help:
	@awk '/^## /{if(!doc)doc=substr($$0,4); next} /^[a-z-]+:/{if(doc){split($$0,t,":"); printf "  make %-13s %s\n", t[1], doc}; doc=""}' $(MAKEFILE_LIST)

## The greeter with ./config.yaml (HTTP :8000, gRPC :9000, ./greeter.db)
run:
	$(CARGO) run --bin greeter -- --config config.yaml $(ARGS)

## The Gin-style router demo on :8000 (ARGS='--addr :8001 --trace' ...)
run-router:
	$(CARGO) run --bin router-demo -- $(ARGS)

## token-auth on :8000 with ./token-auth.db and a DEVELOPMENT secret
run-auth:
	@echo "WARNING: using the development-only TOKEN_AUTH_SECRET; do not deploy this" >&2
	TOKEN_AUTH_SECRET=$${TOKEN_AUTH_SECRET:-$(DEV_TOKEN_AUTH_SECRET)} $(CARGO) run --bin token-auth -- $(ARGS)

## Remove the demo databases (stop the services first) to run the examples afresh
reset:
	@removed=""; \
	for f in $(DEMO_DATABASES); do \
		if [ -e "$$f" ]; then rm -f -- "$$f" && removed="$$removed $$f"; fi; \
	done; \
	if [ -n "$$removed" ]; then echo "reset: removed$$removed"; \
	else echo "reset: nothing to remove (no greeter.db or token-auth.db in $$PWD)"; fi

## Put grpcurl on PATH: installs it into a venv, links it into ~/.cargo/bin
grpcurl:
	@bin="$$(GRPCURL_VENV='$(GRPCURL_VENV)' bash tests/install-grpcurl.sh)" && \
	mkdir -p '$(CARGO_BIN)' && ln -sf "$$bin" '$(CARGO_BIN)/grpcurl' && \
	echo "grpcurl: $(CARGO_BIN)/grpcurl -> $$bin" && \
	case ":$$PATH:" in *':$(CARGO_BIN):'*) ;; \
	*) echo "grpcurl: $(CARGO_BIN) is not on your PATH; add it (rustup's installer does)";; esac

build:
	$(CARGO) build --all-targets

## Every unit and black-box test, tests/grpcurl.sh when grpcurl is there
test:
	$(CARGO) test --all-targets
	$(CARGO) test --doc
	@$(MAKE) --no-print-directory test-grpcurl
	@skipped="the scale-out suites (not part of make test: make test-cluster runs them, with postgresql and redis-server); the differential test against Gin (make test-gin, with golang-go and Debian's Gin)"; \
	if [ -z "$${GRPCURL:-}" ] && ! command -v grpcurl >/dev/null 2>&1; then \
		skipped="tests/grpcurl.sh (grpcurl not on PATH: make grpcurl); $$skipped"; \
	fi; \
	echo "make test: all passed; skipped: $$skipped"

## The scale-out tests: several instances on one PostgreSQL + Redis (feature cluster)
# Each test starts private servers on loopback; without postgresql/redis-server
# installed they say why and pass, unless HANDWIRE_CLUSTER_REQUIRED=1 (CI).
test-cluster:
	$(CARGO) test --features cluster --lib
	$(CARGO) test --features cluster --test cluster

## The router against the real Gin on random route tables (needs Go and Debian's Gin)
# GIN_DIFF_SEED and GIN_DIFF_TABLES choose the run (default seed 56, 2000
# tables). Without golang-go and golang-github-gin-gonic-gin-dev it says why
# and passes, unless HANDWIRE_GIN_REQUIRED=1 (CI).
test-gin:
	$(CARGO) test --test gin_diff -- --ignored --nocapture

test-grpcurl:
	@if [ -f tests/grpcurl.sh ]; then \
		if [ -n "$${GRPCURL:-}" ] || command -v grpcurl >/dev/null 2>&1; then \
			$(CARGO) build --bin greeter && bash tests/grpcurl.sh; \
		elif [ -n "$${REQUIRE_GRPCURL:-}" ]; then \
			echo "grpcurl not found (set GRPCURL or run make grpcurl)" >&2; exit 1; \
		else \
			echo "skipping tests/grpcurl.sh: grpcurl not on PATH (make grpcurl installs it)"; \
		fi; \
	fi

## The examples of README.md and docs/ against the three services, twice, answers checked
demo:
	CARGO=$(CARGO) bash tests/demo.sh

## fmt, clippy -D warnings (with and without cluster), the Markdown render check
lint: lint-docs
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings
	$(CARGO) clippy --all-targets --features cluster -- -D warnings

## README.md and docs/ rendered as CommonMark: no unclosed fence, no swallowed heading, no dead link
lint-docs: $(LINT_VENV)/.installed
	@$(LINT_VENV)/bin/python tests/check_markdown.py --self-test
	$(LINT_VENV)/bin/python tests/check_markdown.py README.md docs/*.md

$(LINT_VENV)/.installed:
	python3 -m venv $(LINT_VENV)
	$(LINT_VENV)/bin/pip install --quiet --disable-pip-version-check 'markdown-it-py>=3,<5'
	touch $@

## Criterion benches: our matcher vs matchit, our JWT vs jsonwebtoken
bench:
	$(CARGO) bench

## Loopback load test beside axum / tonic peers, a few minutes (needs wrk, h2load)
load:
	bash load/load.sh

## Instructions per request beside the same peers, valgrind-counted (needs valgrind, h2load)
instructions:
	bash load/instructions.sh

## ~3 min soak: mixed load, fails on steady RSS / fd growth (needs wrk, h2load)
soak:
	bash load/soak.sh

## Coverage-guided fuzzing of the hand-written parsers (needs cargo-fuzz)
fuzz:
	bash fuzz/run.sh

clean:
	$(CARGO) clean
