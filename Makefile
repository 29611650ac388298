# The two commands the README promises: `make demo` and `make test`. Both run the setup
# script first (idempotent apt-get of every Debian package joule needs).
BUILD ?= build
JOBS ?= $(shell nproc)
MODEL_CACHE ?= $(HOME)/.cache/joule/models
PY := /usr/bin/python3
export JOULE_MODEL_DIR := $(MODEL_CACHE)

.PHONY: all setup build test demo fixtures clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# Real architectures exported from PyTorch with reference outputs; regenerated only when
# tools/export_models.py changes.
fixtures: setup
	@bash scripts/fixtures.sh "$(MODEL_CACHE)"

test: build fixtures
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)
