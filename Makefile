# trainsim — the two commands of the README:
#   make run   install missing build dependencies, build, simulate the built-in default
#   make test  the same set-up, then every test (normal and ASan+UBSan builds)
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan

.PHONY: all deps build build-asan run test test-fast bench fuzz valgrind install clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTS_SANITIZE=ON

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)

run: build
	./$(BUILD)/trainsim simulate

test: build build-asan
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

test-fast: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

bench: build
	@for b in $(BUILD)/bench_*; do echo "== $$b"; $$b; done

install: build
	cmake --install $(BUILD)

# Fuzzing: a separate clang build (build-fuzz, -DTS_FUZZ=ON); every target in
# tests/fuzz runs FUZZ_SECONDS over its corpus (kept in build-fuzz/corpus).
FUZZ_SECONDS ?= 60
fuzz:
	@bash tests/fuzz/smoke.sh --build
	@for t in $$(bash tests/fuzz/smoke.sh --list); do \
	  bash tests/fuzz/smoke.sh --keep $$t $(FUZZ_SECONDS) || exit 1; done

# The whole suite under valgrind memcheck (figures in docs/robustness.md).
valgrind: build
	bash scripts/valgrind.sh $(BUILD) 2

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
