# handwire — the commands a newcomer needs. `make run` and `make test` first.
CARGO ?= cargo
# DEVELOPMENT ONLY secret for `make run-auth`. Never use it anywhere real:
# set TOKEN_AUTH_SECRET yourself (at least 32 random bytes) outside local demos.
DEV_TOKEN_AUTH_SECRET := dev-only-INSECURE-secret-change-me-0123456789

.PHONY: run run-router run-auth test test-cluster test-grpcurl demo lint bench load soak fuzz build clean

## Area A: the greeter with ./config.yaml (HTTP :8000, gRPC :9000)
run:
	$(CARGO) run --bin greeter -- --config config.yaml

## Area B: the Gin-style router demo on :8000
run-router:
	$(CARGO) run --bin router-demo

## Area C: token-auth on :8000 with a DEVELOPMENT secret (loudly insecure)
run-auth:
	@echo "WARNING: using the development-only TOKEN_AUTH_SECRET; do not deploy this" >&2
	TOKEN_AUTH_SECRET=$${TOKEN_AUTH_SECRET:-$(DEV_TOKEN_AUTH_SECRET)} $(CARGO) run --bin token-auth

build:
	$(CARGO) build --all-targets

## Every unit and black-box test, then the grpcurl script when grpcurl is there
test:
	$(CARGO) test --all-targets
	$(CARGO) test --doc
	@$(MAKE) --no-print-directory test-grpcurl

## Several instances on one PostgreSQL + Redis (feature cluster). Each test
## starts private servers on loopback; without postgresql/redis-server
## installed they say why and pass, unless HANDWIRE_CLUSTER_REQUIRED=1 (CI).
test-cluster:
	$(CARGO) test --features cluster --lib
	$(CARGO) test --features cluster --test cluster

test-grpcurl:
	@if [ -f tests/grpcurl.sh ]; then \
		if [ -n "$${GRPCURL:-}" ] || command -v grpcurl >/dev/null 2>&1; then \
			$(CARGO) build --bin greeter && bash tests/grpcurl.sh; \
		elif [ -n "$${REQUIRE_GRPCURL:-}" ]; then \
			echo "grpcurl not found (set GRPCURL or run tests/install-grpcurl.sh)" >&2; exit 1; \
		else \
			echo "skipping tests/grpcurl.sh: grpcurl not installed (tests/install-grpcurl.sh installs it)"; \
		fi; \
	fi

## The README's curl / grpcurl examples against the three services, answers checked
demo:
	CARGO=$(CARGO) bash tests/demo.sh

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings
	$(CARGO) clippy --all-targets --features cluster -- -D warnings

## Criterion benches: our matcher vs matchit, our JWT vs jsonwebtoken
bench:
	$(CARGO) bench

## Loopback load test, a few minutes: each service side by side with an axum /
## tonic peer (examples/peer_*.rs), medians of interleaved rounds, a markdown
## table at the end (needs wrk and h2load; not run by CI)
load:
	bash bench/load.sh

## ~3 min soak: mixed load on the three services, RSS and fd series, fails on
## steady growth (needs wrk and h2load; not run by CI)
soak:
	bash bench/soak.sh

## Coverage-guided fuzzing of the hand-written parsers (needs cargo-fuzz)
fuzz:
	bash fuzz/run.sh

clean:
	$(CARGO) clean
