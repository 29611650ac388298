# The two commands the README promises: `make demo` and `make test`. Both run the setup
# script first (idempotent apt-get of every Debian package joule needs).
BUILD ?= build
JOBS ?= $(shell nproc)
MODEL_CACHE ?= $(HOME)/.cache/joule/models
PY := /usr/bin/python3
comma := ,
export JOULE_MODEL_DIR := $(MODEL_CACHE)
# A compiler cache shared by every clone (CI builds a fresh clone each time): paths under the
# clone are hashed relative to it, and the -g builds do not hash the working directory.
CCACHE = $(shell command -v ccache 2>/dev/null)
LAUNCHER = $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all setup build test demo fixtures clean train-fashion bench-train zoo opdb-bench san-build test-asan test-asan-fast fuzz

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(LAUNCHER) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# Real architectures exported from PyTorch with reference outputs; regenerated only when
# tools/export_models.py changes.
fixtures: setup
	@bash scripts/fixtures.sh "$(MODEL_CACHE)"

test: build fixtures
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)

# Long runs, reported in BENCHMARKS.md (not part of `make test`):
# the bundled CNN trained from random weights on Fashion-MNIST to >= 91.5 % test accuracy;
train-fashion: build
	@mkdir -p runs/train
	@$(BUILD)/joule train default --init random --data /usr/share/datasets/fashion-mnist:train \
	  --val /usr/share/datasets/fashion-mnist:test --optimizer adamw --lr 3e-3 --weight-decay 5e-4 \
	  --schedule cosine --warmup-steps 100 --batch 256 --epochs 5 --hflip --threads 2 \
	  --checkpoint runs/train/fashion_cnn.ckpt -o runs/train/fashion_cnn_trained.onnx
# training speed against PyTorch, same model, batch and threads.
bench-train: build
	@PYTHONPATH=$(BUILD)/python $(PY) tools/bench_train.py --batch 256 --threads 2 --steps 25 --processes 3

# The zoo (tools/zoo.py): 22 torchvision architectures and a BERT-style encoder, seeded weights,
# exported once to ~/.cache/joule/zoo; joule's output against PyTorch's, latency against ONNX Runtime
# and PyTorch at 1 and 2 threads and batch 8, time on reference kernels, peak RSS.
# ZOO_MODELS=a,b: only those; ZOO_OTHER=path/to/joule: another build timed alternately too.
ZOO_DIR ?= $(HOME)/.cache/joule/zoo
zoo: build
	$(PY) tools/zoo.py export $(ZOO_DIR) $(if $(ZOO_MODELS),--models $(ZOO_MODELS))
	$(PY) tools/zoo.py check $(ZOO_DIR) $(BUILD)/joule --threads 1,2 --batch8 $(if $(ZOO_MODELS),--models $(ZOO_MODELS)) \
	  $(if $(ZOO_OTHER),--other $(ZOO_OTHER))

# The operator store built from the shipped quick sweep and the zoo's layers at 1 thread, then
# each zoo model predicted and measured: leave-one-architecture-out, then with every row.
OPDB_BENCH_DB ?= $(HOME)/.cache/joule/opdb_bench.sqlite
OPDB_BENCH_MODELS ?= alexnet bert_encoder convnext_tiny densenet121 efficientnet_b0 googlenet inception_v3 mnasnet0_5 \
  mobilenet_v2 mobilenet_v3_small regnet_x_400mf regnet_y_400mf resnet18 resnet50 resnext50_32x4d shufflenet_v2_x0_5 \
  squeezenet1_0 swin_t vit_b_16
opdb-bench: build
	$(PY) tools/zoo.py export $(ZOO_DIR) --models $(shell echo $(OPDB_BENCH_MODELS) | tr ' ' ',')
	rm -f $(OPDB_BENCH_DB)
	$(BUILD)/joule opdb sweep --stage quick --threads 1 --db $(OPDB_BENCH_DB)
	$(BUILD)/joule opdb add $(foreach m,$(OPDB_BENCH_MODELS),$(ZOO_DIR)/$(m)/model.onnx) --threads 1 --db $(OPDB_BENCH_DB)
	PYTHONPATH=$(BUILD)/python $(PY) tools/eval_predictor.py --db $(OPDB_BENCH_DB) --model-dir $(ZOO_DIR) \
	  --models $(shell echo $(OPDB_BENCH_MODELS) | tr ' ' ',')
	$(BUILD)/joule predict $(foreach m,$(OPDB_BENCH_MODELS),$(ZOO_DIR)/$(m)/model.onnx) --validate --leave-one-out \
	  --threads 1 --runs 20 --db $(OPDB_BENCH_DB)
	$(BUILD)/joule predict $(foreach m,$(OPDB_BENCH_MODELS),$(ZOO_DIR)/$(m)/model.onnx) --validate \
	  --threads 1 --runs 20 --db $(OPDB_BENCH_DB)

# The sanitizer build: clang with AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer's
# coverage ($(SAN_OPT) -g, -O1 by default; no CUDA), in $(SAN_BUILD). About 40 minutes from scratch on 2 cores.
SAN_BUILD ?= build-fuzz
SAN_OPT ?= -O1
SAN_FLAGS := -fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer -fno-sanitize-recover=undefined
san-build: setup
	@CC=clang CXX=clang++ cmake -S . -B $(SAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(LAUNCHER) \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(SAN_OPT) -g" -DCMAKE_CXX_FLAGS="$(SAN_FLAGS)" -DJOULE_FILE_O3=OFF \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined \
	  -DJOULE_CUDA=OFF -DJOULE_WERROR=OFF >/dev/null
	@cmake --build $(SAN_BUILD) -j $(JOBS)

# Every test under ASan + UBSan except the Python module's (a sanitized extension inside an
# unsanitized interpreter) and the browser tests (headless Chromium beside a sanitized server
# times out): docs/reliability.md.
test-asan: san-build fixtures
	@ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_init_order=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(SAN_BUILD) --output-on-failure -j $(JOBS) -LE "python|browser" --timeout 1800

# CI's sanitizer stage: the same sanitizers at -O0 in $(ASAN_FAST_BUILD) (about 23 minutes from
# scratch on 2 cores, against 40 at -O1), then every suite but the slow end-to-end ones (cli,
# profile, experiment, opdb: 25 of the 30 minutes `make test-asan` takes) and those test-asan
# leaves out (python, browser): about 8 minutes. docs/reliability.md.
ASAN_FAST_BUILD ?= build-asan
test-asan-fast: fixtures
	@$(MAKE) --no-print-directory san-build SAN_BUILD=$(ASAN_FAST_BUILD) SAN_OPT=-O0
	@ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_init_order=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_FAST_BUILD) --output-on-failure -j $(JOBS) -LE "python|browser|cli|profile|experiment|opdb" \
	  --timeout 1800

# Each fuzz target for FUZZ_SECONDS (default 60), one after the other: scripts/fuzz.sh.
# FUZZ_TARGETS=a,b: only those.
FUZZ_SECONDS ?= 60
fuzz: san-build
	@bash scripts/fuzz.sh $(SAN_BUILD) $(FUZZ_SECONDS) $(subst $(comma), ,$(FUZZ_TARGETS))

clean:
	rm -rf $(BUILD)
