# The two commands: `make run` (the main job) and `make test` (every test). Both install what they
# need first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: setup build run test clean format

setup:
	@bash tools/setup.sh

$(BUILD)/build.ninja:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: setup $(BUILD)/build.ninja
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@bash tools/run_main_job.sh $(BUILD)

test: build
	@bash tools/run_tests.sh $(BUILD)

format:
	@clang-format -i $$(git ls-files '*.cpp' '*.h' ':!src/runtime/backends/webgpu/webgpu_api.h')

clean:
	rm -rf $(BUILD)
