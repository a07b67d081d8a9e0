# The README's two commands: `make demo` and `make test`. Both install what is missing first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGYM_WERROR=ON
# Where NeMo Gym's conformance data lives (tests that need it say so when it is missing).
export GYM_CONFORMANCE_DIR ?= $(abspath ../shared/data/conformance)

.PHONY: setup configure build test demo bench bench-e2e bench-telemetry format clean

setup:
	bash scripts/setup.sh

configure: setup
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) --timeout 600

demo: configure
	cmake --build $(BUILD) -j$(JOBS) --target gym
	$(BUILD)/src/cli/gym demo --output-dir $(BUILD)/demo

bench: build
	GYM_BUILD_DIR=$(BUILD) bash bench/http_load.sh

# End-to-end rollouts/s against the Python peer on NeMo Gym's stack (bench/e2e_load.sh).
bench-e2e: configure
	cmake --build $(BUILD) -j$(JOBS) --target gym
	GYM_BUILD_DIR=$(BUILD) bash bench/e2e_load.sh

# Telemetry on vs off on the same end-to-end workload (bench/telemetry_overhead.sh).
bench-telemetry: configure
	cmake --build $(BUILD) -j$(JOBS) --target gym gym_test_server
	GYM_BUILD_DIR=$(BUILD) bash bench/telemetry_overhead.sh

# Lays out every tracked .h/.cpp with .clang-format (clang-format 14); `make test` checks it.
format: setup
	bash scripts/format.sh

clean:
	rm -rf $(BUILD)
