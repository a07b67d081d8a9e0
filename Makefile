# The README's two commands: `make demo` and `make test`. Both install what is missing first:
# `make demo` (and `make install`) only what building `gym` needs, `make test` also the test
# suite's libraries and peers, `make bench` also the load-test peers (scripts/setup.sh).
BUILD ?= build
# `make install` puts PREFIX/bin/gym (and its alias names) on PATH when PREFIX/bin is on it.
PREFIX ?= $(HOME)/.local
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGYM_WERROR=ON
# Where NeMo Gym's conformance data lives (tests that need it say so when it is missing).
export GYM_CONFORMANCE_DIR ?= $(abspath ../shared/data/conformance)

.PHONY: setup setup-demo setup-bench configure configure-gym build test test-sanitize fuzz demo \
	install wheel bench bench-e2e bench-telemetry format clean

setup:
	bash scripts/setup.sh test

setup-demo:
	bash scripts/setup.sh demo

setup-bench:
	bash scripts/setup.sh bench

configure: setup
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DGYM_BUILD_TESTS=ON -DGYM_BUILD_BENCH=ON

# Only the gym binary: no test or benchmark libraries are looked for.
configure-gym: setup-demo
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DGYM_BUILD_TESTS=OFF -DGYM_BUILD_BENCH=OFF

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# After the suite, every fuzz target runs TEST_FUZZ_SECONDS over its corpus (`make fuzz`: its
# clang build of the libraries the targets need took 4.3 min here, the runs 1 min).
TEST_FUZZ_SECONDS ?= 10
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) --timeout 600
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS)

# The whole suite under ASan + UBSan + LeakSanitizer (GCC), in its own build dir. Reports go to
# files, so those of the servers the integration tests start count too. Not part of `make test`:
# its build alone is about twice the normal one (docs/development.md, "Sanitizers").
SANITIZE_BUILD ?= build-sanitize
# Reports and the LeakSanitizer suppressions (scripts/lsan-suppressions.txt, copied) outside the
# source tree: a test runs the installed gym with the tree hidden (cli_usage_test).
SANITIZE_REPORTS ?= $(or $(TMPDIR),/tmp)/gym-sanitizer-reports
SANITIZE_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# Not run here: the tests whose assertion is a bound on resident memory (an endless body, a huge
# line, a multi-GB resume). ASan's shadow memory, redzones and 256 MB quarantine make RSS say
# nothing about the code; `make test` runs them.
SANITIZE_EXCLUDE := ResumeAtScale\.|ServerOutput\.AHugeLine|ModelServerResponseBound\.|ResponseBounds\.AnEndless|ResponseBounds\.AnOtlpCollectorAnsweringWithoutEnd|HttpClientBounds\.(AnEndlessBody|TheDefaultLimit)
test-sanitize: setup
	cmake -S . -B $(SANITIZE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS="$(SANITIZE_FLAGS)" \
	  -DCMAKE_EXE_LINKER_FLAGS="$(SANITIZE_FLAGS)" -DCMAKE_SHARED_LINKER_FLAGS="$(SANITIZE_FLAGS)" \
	  -DGYM_JEMALLOC=OFF -DGYM_BUILD_BENCH=OFF
	cmake --build $(SANITIZE_BUILD) -j$(JOBS)
	rm -rf $(SANITIZE_REPORTS) && mkdir -p $(SANITIZE_REPORTS)
	cp scripts/lsan-suppressions.txt $(SANITIZE_REPORTS).lsan-suppressions
	rc=0; ASAN_OPTIONS=detect_leaks=1:log_path=$(SANITIZE_REPORTS)/asan \
	  LSAN_OPTIONS=suppressions=$(SANITIZE_REPORTS).lsan-suppressions:print_suppressions=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:log_path=$(SANITIZE_REPORTS)/ubsan \
	  ctest --test-dir $(SANITIZE_BUILD) --output-on-failure -j$(JOBS) --timeout 1800 \
	    -E '$(SANITIZE_EXCLUDE)' || rc=$$?; \
	if ls $(SANITIZE_REPORTS)/* >/dev/null 2>&1; then \
	  echo "sanitizer reports (tests and the processes they started) in $(SANITIZE_REPORTS):"; \
	  head -n 30 $(SANITIZE_REPORTS)/*; exit 1; fi; exit $$rc

# libFuzzer targets (fuzz/) with clang, ASan and UBSan in their own build dir, each run for
# FUZZ_SECONDS over its corpus (scripts/fuzz.sh); fails on a crash, leak or hang. clang 14's
# -fsanitize=function cannot compile coroutines ("Cannot represent a difference across
# sections"), so that one check of UBSan is off.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=function \
  -fno-sanitize-recover=undefined -fno-omit-frame-pointer
fuzz: setup
	cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
	  -DCMAKE_CXX_FLAGS="$(FUZZ_FLAGS)" -DCMAKE_EXE_LINKER_FLAGS="$(FUZZ_FLAGS)" \
	  -DGYM_FUZZ=ON -DGYM_BUILD_TESTS=OFF -DGYM_BUILD_BENCH=OFF
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz_targets
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh $(FUZZ_BUILD)

demo: configure-gym
	cmake --build $(BUILD) -j$(JOBS) --target gym
	$(BUILD)/src/cli/gym demo --output-dir $(BUILD)/demo

install: configure-gym
	cmake --build $(BUILD) -j$(JOBS) --target gym
	cmake --install $(BUILD) --prefix $(PREFIX)

# A wheel of the `nemo_gym` Python package (python/) that carries the gym binary (stripped), in
# dist/: `pip install dist/nemo_gym-*.whl` gives trainers both (docs/guides/training.md).
WHEEL_DIR ?= dist
wheel: setup-demo
	test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DGYM_BUILD_TESTS=OFF -DGYM_BUILD_BENCH=OFF
	cmake --build $(BUILD) -j$(JOBS) --target gym
	strip -o $(BUILD)/gym-for-wheel $(BUILD)/src/cli/gym
	cd python && GYM_WHEEL_BINARY=$(abspath $(BUILD))/gym-for-wheel /usr/bin/python3 -c \
	  "import sys; sys.path.insert(0, 'build_backend'); import gym_wheel; \
	  print('$(WHEEL_DIR)/' + gym_wheel.build_wheel('$(abspath $(WHEEL_DIR))'))"

bench: setup-bench build
	GYM_BUILD_DIR=$(BUILD) bash bench/http_load.sh

# End-to-end rollouts/s against the Python peer on NeMo Gym's stack (bench/e2e_load.sh).
bench-e2e: setup-bench configure
	cmake --build $(BUILD) -j$(JOBS) --target gym
	GYM_BUILD_DIR=$(BUILD) bash bench/e2e_load.sh

# Telemetry on vs off on the same end-to-end workload (bench/telemetry_overhead.sh).
bench-telemetry: setup-bench configure
	cmake --build $(BUILD) -j$(JOBS) --target gym gym_test_server
	GYM_BUILD_DIR=$(BUILD) bash bench/telemetry_overhead.sh

# Lays out every tracked .h/.cpp with .clang-format (clang-format 14); `make test` checks it.
format: setup
	bash scripts/format.sh

clean:
	rm -rf $(BUILD)
