# Two commands on a fresh Debian/Ubuntu machine with Python 3.11:
#   make run   installs what is missing, prepares the demo tenant, serves on 127.0.0.1:8000
#   make test  installs what is missing and runs the whole test suite
#   make test-fast  the same checks and the unit tier: every test not marked slow
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
MANAGE := $(BIN)/python manage.py
STAMP := $(VENV)/.installed
TURN_MODEL := $(VENV)/share/stimmwerk/smart-turn-v3.2-cpu.onnx
# Not HOST/PORT: shells such as zsh set HOST to the machine name.
RUN_HOST ?= 127.0.0.1
RUN_PORT ?= 8000
# The voice agent's WebSocket (/api/voice/agent) is served by uvicorn on a port of its
# own, so gunicorn keeps serving HTTP exactly as measured (docs/architecture.md).
RUN_WS_PORT ?= 8001
# Asterisk's AudioSocket (phone calls from a PBX, docs/telephony.md): a TCP listener of its own.
RUN_AUDIOSOCKET_PORT ?= 8002
# The SIP agent (UDP and TCP; RTP on SIP_RTP_PORTS, default 40000-40999; docs/telephony.md).
RUN_SIP_PORT ?= 5070
# Debian packages, one list per command, each package with its reason (docs/operations.md);
# tests/architecture/test_installed_programs.py fails when the code or the tests run a
# program (or load a library or word list) that no package of these lists provides.
# The product at run time: the German word list of the script linter (wngerman) and the
# eSpeak NG library that pyttsx3 loads to speak (libespeak-ng1).
SYSTEM_PACKAGES := wngerman libespeak-ng1
# The benchmarks (`make bench`): wrk is the load generator; PostgreSQL is the second
# database measured (.ci/postgres); espeak-ng's command line speaks the voice agent's callers;
# kamailio (a carrier's registrar) and baresip-core (a SIP phone) for the SIP call.
BENCH_SYSTEM_PACKAGES := wrk postgresql espeak-ng kamailio baresip-core
# The test suite (`make test` and `make test-fast`, whose installed-programs test checks
# them too): Chromium for the browser tests (Playwright drives it), the espeak-ng command
# line (Whisper's determinism test hears its speech), Redis for the two-server tests
# (.ci/redis), Node.js for OpenAI's npm package run against /v1 (tests/node), and the
# benchmarks' packages (among them kamailio and baresip-core, which the SIP agent's tests
# use too), since a smoke test runs every benchmark; sipsak sends the SIP agent's tests
# their hostile SIP (floods, random traces).
TEST_SYSTEM_PACKAGES := chromium espeak-ng redis-server nodejs sipsak $(BENCH_SYSTEM_PACKAGES)
# OpenAI's npm package, pinned by tests/node/package-lock.json: installed here (npm ci),
# never while the tests run. npm comes with Node.js where Node.js bundles it, else from
# Debian's npm package.
NODE_SDK := tests/node/node_modules/.package-lock.json

# pytest-xdist workers of `make test` / `make test-fast`: both cores of the 2-core
# machines (`TEST_WORKERS=auto` for all cores; 0 runs in this process).
TEST_WORKERS ?= 2
# Tests that must not share a machine's moment with another are grouped (xdist_group):
# loadgroup sends each group to one worker.
PYTEST_XDIST := -n $(TEST_WORKERS) --dist loadgroup

.PHONY: run test test-fast bench install system-packages migrate serve clean gateway-token

run: install .env gateway-token migrate
	$(MANAGE) collectstatic --noinput -v0
	$(MANAGE) seed_demo --base-url http://$(RUN_HOST):$(RUN_PORT)
	@echo "Serving on http://$(RUN_HOST):$(RUN_PORT)/ with the voice agent and a job worker (Ctrl-C stops all)"
	@echo "Voice agent: ws://$(RUN_HOST):$(RUN_WS_PORT)/api/voice/agent; talk to it at http://$(RUN_HOST):$(RUN_PORT)/widget/voice-demo or on an assistant's admin page (Im Browser testen)"
	@echo "Phone calls: Twilio Voice URL http://$(RUN_HOST):$(RUN_PORT)/voice/twilio/<carrier>/incoming (stream on ws://$(RUN_HOST):$(RUN_WS_PORT)); AudioSocket on $(RUN_HOST):$(RUN_AUDIOSOCKET_PORT); SIP agent on $(RUN_HOST):$(RUN_SIP_PORT) UDP+TCP, RTP ports $${SIP_RTP_PORTS:-40000-40999} (docs/telephony.md)"
# The job worker has a session of its own: Ctrl-C reaches gunicorn only, and the worker
# gets one TERM from the trap (a TERM to its child processes too can leave it hanging).
# uvicorn (the agent's WebSocket and the carriers' media streams) and the AudioSocket
# listener are stopped by the same trap. Its HTTP protocol drops a
# request not complete in ASGI_REQUEST_TIMEOUT_SEC (uvicorn has no header timeout), and
# frames over 64 KiB end a session (the agent's frames are at most 6,400 bytes).
	REGISTRY_PROBE_BASE_URL=http://$(RUN_HOST):$(RUN_PORT) VOICE_PUBLIC_BASE_URL=http://$(RUN_HOST):$(RUN_PORT) \
	  setsid $(MANAGE) qcluster & jobs=$$!; \
	$(BIN)/uvicorn console.asgi:application --host $(RUN_HOST) --port $(RUN_WS_PORT) --ws websockets-sansio \
	  --http console.asgi_http:H11WithRequestTimeout --ws-max-size 65536 \
	  --lifespan off --no-access-log --log-level warning & agent=$$!; \
	$(MANAGE) audiosocket --host $(RUN_HOST) --port $(RUN_AUDIOSOCKET_PORT) & phone=$$!; \
	$(MANAGE) sip_agent --host $(RUN_HOST) --port $(RUN_SIP_PORT) & sip=$$!; \
	trap 'kill $$agent 2>/dev/null; kill $$phone 2>/dev/null; kill $$sip 2>/dev/null; kill $$jobs 2>/dev/null; wait $$jobs' EXIT; \
	AGENT_WS_URL=ws://$(RUN_HOST):$(RUN_WS_PORT) AGENT_VOICE_DEMO=1 VOICE_PUBLIC_BASE_URL=http://$(RUN_HOST):$(RUN_PORT) \
	  $(BIN)/gunicorn console.wsgi --config gunicorn.conf.py --bind $(RUN_HOST):$(RUN_PORT) --workers 2 --error-logfile -

test: install
	@bash .ci/apt-ensure $(TEST_SYSTEM_PACKAGES)
	@$(MAKE) --no-print-directory $(NODE_SDK)
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy
	$(BIN)/pytest $(PYTEST_XDIST) $(PYTEST_ARGS)

# The unit tier: no browsers, server processes, real speech engines or bursts (marker
# `slow`); CI runs the whole suite (`make test`).
test-fast: install
	@bash .ci/apt-ensure $(TEST_SYSTEM_PACKAGES)
	@$(MAKE) --no-print-directory $(NODE_SDK)
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy
	$(BIN)/pytest $(PYTEST_XDIST) -m "not slow" $(PYTEST_ARGS)

$(NODE_SDK): tests/node/package.json tests/node/package-lock.json
	@command -v npm >/dev/null || bash .ci/apt-ensure npm
	cd tests/node && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error

bench: install
	@bash .ci/apt-ensure $(BENCH_SYSTEM_PACKAGES)
	$(BIN)/python bench/run.py

install: system-packages $(STAMP) $(TURN_MODEL)

system-packages:
	@bash .ci/apt-ensure $(SYSTEM_PACKAGES)

# Reinstalls only when pyproject.toml changes, so a second `make run` starts in seconds.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { bash .ci/apt-ensure python3-venv && $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet ".[test]"
	@touch $@

# The voice agent's end-of-turn model (Smart Turn v3.2, BSD-2-Clause), taken out of the
# pipecat-ai wheel and verified by sha256 (speech_app/smart_turn_fetch.py; docs/architecture.md
# says why the file and not the package). Without it (no network) the agent ends turns after
# a fixed pause, so a failed fetch does not stop the install; the next make tries again.
$(TURN_MODEL): $(STAMP)
	@$(BIN)/python -m speech_app.smart_turn_fetch $@ || true

# A local settings file with a fresh secret and gateway token; never committed.
.env:
	@sed -e "s|^SECRET_KEY=.*|SECRET_KEY=$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(50))')|" \
	     -e "s|^GATEWAY_STATIC_TOKEN=.*|GATEWAY_STATIC_TOKEN=$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(32))')|" \
	     .env.example > .env
	@echo "Wrote .env with a new SECRET_KEY and GATEWAY_STATIC_TOKEN."

# A .env written before the gateway existed gets its token too (the first line of a
# name counts, so an empty one is replaced, not shadowed).
gateway-token: .env
	@grep -q '^GATEWAY_STATIC_TOKEN=..*' .env || { sed -i '/^GATEWAY_STATIC_TOKEN=/d' .env; \
	  echo "GATEWAY_STATIC_TOKEN=$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(32))')" >> .env; \
	  echo "Added a GATEWAY_STATIC_TOKEN to .env."; }

migrate: install .env
	$(MANAGE) migrate --noinput -v0

clean:
	rm -rf $(VENV) staticfiles .pytest_cache
