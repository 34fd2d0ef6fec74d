# The two commands: `make run` (the main job) and `make test` (every test). Each installs what it
# needs first: `make run` only what the main job uses (toolchain, libraries, Dawn, the dataset) and
# builds only the engine binary; `make test` adds the test tools and PyTorch and builds everything
# (the browser side and the fuzz targets as its suites begin).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CONFIGURE = cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

.PHONY: setup-main setup-test build-main build run test clean format

setup-main:
	@bash tools/setup.sh main

setup-test:
	@bash tools/setup.sh test

# The main job needs neither GoogleTest nor the test binaries: configure without them.
build-main: setup-main
	@$(CONFIGURE) -DSCELLIS_TESTS=OFF >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target scellis

# Each phase prints the time it starts, so a slow build shows where its time went. The browser
# side (tools/build_web.sh) is built by tools/run_tests.sh, beside the sanitized fuzz targets.
build: setup-test
	@echo "build: the engine, the tests and the tools ($$(date +%T))"
	@$(CONFIGURE) -DSCELLIS_TESTS=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	@echo "build: done ($$(date +%T))"

run: build-main
	@bash tools/run_main_job.sh $(BUILD)

test: build
	@bash tools/run_tests.sh $(BUILD)

format:
	@clang-format -i $$(git ls-files '*.cpp' '*.h' ':!src/runtime/backends/webgpu/webgpu_api.h')

clean:
	rm -rf $(BUILD)
