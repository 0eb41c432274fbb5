# The two set-up commands of the README: `make doctor` (the main job) and
# `make test` (every test). Both install missing Debian packages first.
JOBS ?= 2
BUILD ?= build
CMAKE_FLAGS ?= -DSTALLSCOPE_WERROR=ON

.PHONY: doctor test deps build unit e2e san-build asan fuzz bench format format-check clean

doctor: build
	./$(BUILD)/stallscope doctor

test: build
	@$(MAKE) --no-print-directory format-check
	@echo "== unit and end-to-end tests =="
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory asan
	@$(MAKE) --no-print-directory fuzz
	@echo "== all test stages passed =="

# `make doctor` installs only what building needs; `make test` also what the
# tests run against; `make bench` also the peer tools the benches time
# stallscope against (scripts/setup.sh).
DEPS ?= test
doctor: DEPS = build
bench: DEPS = bench
deps:
	@scripts/setup.sh $(DEPS)

build: deps
	@[ -f $(BUILD)/build.ninja ] || cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# Unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer, and the
# fuzzers, from one clang build (build-san): its library objects carry both the
# sanitizers and libFuzzer's coverage, so the library is compiled once for both.
# It leaves out the command line (STALLSCOPE_CLI=OFF): the unit tests and the
# fuzzers do not use it, and the e2e tests run in the first build.
SAN_BUILD ?= build-san
san-build: deps
	@[ -f $(SAN_BUILD)/build.ninja ] || CC=clang CXX=clang++ cmake -S . -B $(SAN_BUILD) -G Ninja \
	  -DSTALLSCOPE_SANITIZE=ON -DSTALLSCOPE_FUZZ=ON -DSTALLSCOPE_BENCH=OFF -DSTALLSCOPE_CLI=OFF \
	  -DCMAKE_BUILD_TYPE=Debug
	cmake --build $(SAN_BUILD) -j $(JOBS)

asan: san-build
	@echo "== unit tests under ASan+UBSan =="
	# hwloc's plugins (hwloc_pci via libpciaccess) leak a few KiB when they are
	# unloaded, and LeakSanitizer cannot name frames of an unloaded module:
	# without them our own hwloc calls are still checked.
	# One process per shard, not per test: ASan's start-up is paid JOBS times.
	HWLOC_PLUGINS_PATH=/nonexistent scripts/run-gtest-shards.sh $(SAN_BUILD)/stallscope_tests $(JOBS)

# Every parser's libFuzzer target, a short run each (FUZZ_SECONDS), JOBS at once.
FUZZ_SECONDS ?= 5
fuzz: san-build
	@echo "== fuzzers, $(FUZZ_SECONDS) s each =="
	scripts/run-fuzzers.sh $(SAN_BUILD) $(FUZZ_SECONDS) $(JOBS)

# The sampler against pidstat + iostat; the other benches (bench/, each row of
# docs/performance.md names its command) find their peer tools installed too.
bench: build
	bench/sample_cost.sh ./$(BUILD)

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

# Every C++ file as clang-format (.clang-format) writes it; a failing check
# names each file and line, and `make format` mends them.
format-check:
	@echo "== clang-format =="
	@command -v clang-format >/dev/null || { echo "clang-format is not installed (scripts/setup.sh test)"; exit 1; }
	@out=$$(git ls-files '*.cc' '*.h' | xargs clang-format --dry-run --Werror 2>&1); rc=$$?; \
	if [ $$rc -ne 0 ]; then \
	  files=$$(echo "$$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u); \
	  echo "not clang-format clean (run make format):"; \
	  if [ -n "$$files" ]; then echo "$$files" | sed 's/^/  /'; else echo "$$out" | tail -5; fi; \
	  exit 1; \
	fi

clean:
	rm -rf build $(SAN_BUILD) build-asan build-fuzz
