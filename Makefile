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

.PHONY: setup setup-demo setup-bench configure configure-gym build test demo install bench \
	bench-e2e bench-telemetry format clean

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

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) --timeout 600

demo: configure-gym
	cmake --build $(BUILD) -j$(JOBS) --target gym
	$(BUILD)/src/cli/gym demo --output-dir $(BUILD)/demo

install: configure-gym
	cmake --build $(BUILD) -j$(JOBS) --target gym
	cmake --install $(BUILD) --prefix $(PREFIX)

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
