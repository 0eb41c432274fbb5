# The two set-up commands of the README: `make doctor` (the main job) and
# `make test` (every test). Both install missing Debian packages first.
JOBS ?= 2
BUILD ?= build
CMAKE_FLAGS ?= -DSTALLSCOPE_WERROR=ON

.PHONY: doctor test deps build unit e2e asan fuzz bench format clean

doctor: build
	./$(BUILD)/stallscope doctor

test: build
	@echo "== unit and end-to-end tests =="
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory asan
	@$(MAKE) --no-print-directory fuzz
	@echo "== all test stages passed =="

deps:
	@scripts/setup.sh

build: deps
	@[ -f $(BUILD)/build.ninja ] || cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# Unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
asan: deps
	@echo "== unit tests under ASan+UBSan =="
	@[ -f build-asan/build.ninja ] || cmake -S . -B build-asan -G Ninja $(CMAKE_FLAGS) \
	  -DSTALLSCOPE_SANITIZE=ON -DSTALLSCOPE_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-asan -j $(JOBS) --target stallscope_tests stallscope
	# hwloc's plugins (hwloc_pci via libpciaccess) leak a few KiB when they are
	# unloaded, and LeakSanitizer cannot name frames of an unloaded module:
	# without them our own hwloc calls are still checked.
	cd build-asan && HWLOC_PLUGINS_PATH=/nonexistent ctest --output-on-failure -j $(JOBS) -L unit

# Every parser's libFuzzer target, a short run each (FUZZ_SECONDS).
FUZZ_SECONDS ?= 10
fuzz: deps
	@echo "== fuzzers, $(FUZZ_SECONDS) s each =="
	@[ -f build-fuzz/build.ninja ] || CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja \
	  -DSTALLSCOPE_FUZZ=ON -DSTALLSCOPE_TESTS=OFF -DSTALLSCOPE_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-fuzz -j $(JOBS)
	scripts/run-fuzzers.sh build-fuzz $(FUZZ_SECONDS)

bench: build
	bench/sample_cost.sh ./$(BUILD)

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf build build-asan build-fuzz
