# The two commands of README.md, plus benchmarks and the sanitizer build.
# Each target installs missing packages, configures and builds as needed.
#   make run    build (default preset) and run the main job, `capsim check`, on
#               built-in defaults (every property, then every negative control)
#   make test   the same, then the test suite through ctest, less the campaigns
#               (label `campaign`: clang-tidy's exact function sizes, the
#               libFuzzer build and its minute), which take longer than the
#               rest together; under 10 minutes on two cores with a warm ccache
#   make campaigns  the default build's campaigns alone, one after the other:
#               each uses every core (.ci/run runs them)
#   make bench  release build, then the Google Benchmark suite
#   make bench-quick  the same without the rows that take minutes (under a
#               minute; bench/main.cpp says what it leaves out)
#   make asan   ASan + UBSan build, then the whole test suite
#   make docs-images  the pictures of docs/gallery.md, drawn by capsim from the corpus
#   make install  build (default preset), then copy capsim to $(PREFIX)/bin
#               (PREFIX defaults to ~/.local)
# JOBS defaults to the number of cores.

JOBS ?= $(shell nproc)
# capsim check's worker processes (at most 64; the report is the same for any count).
CHECK_JOBS ?= $(shell n=$$(nproc); [ $$n -gt 64 ] && n=64; echo $$n)
CMAKE ?= cmake
CTEST ?= ctest
PREFIX ?= $(HOME)/.local

.PHONY: deps run test campaigns install bench bench-quick asan docs-images clean

deps:
	@bash scripts/install-deps.sh

define build_preset
	@[ -f build/$(1)/build.ninja ] || $(CMAKE) --preset $(1)
	$(CMAKE) --build --preset $(1) -j $(JOBS)
endef

run: deps
	$(call build_preset,default)
	./build/default/cli/capsim check --jobs $(CHECK_JOBS)
	@echo
	@echo "Next: build/default/cli/capsim check --list          (the catalogue)"
	@echo "      build/default/cli/capsim replay data/corpus/*.jsonl   (replay the recorded runs)"
	@echo "      build/default/cli/capsim scenario --list       (the PyTorch tests it mirrors)"
	@echo "      docs/properties.md, docs/trace-format.md"

test: deps
	$(call build_preset,default)
	./build/default/cli/capsim check --no-progress --jobs $(CHECK_JOBS)
	$(CTEST) --preset default -j $(JOBS) --label-exclude campaign

campaigns: deps
	$(call build_preset,default)
	$(CTEST) --preset default -j 1 --label-regex campaign

install: deps
	$(call build_preset,default)
	$(CMAKE) --install build/default --prefix "$(PREFIX)"
	@echo "capsim is $(PREFIX)/bin/capsim; put $(PREFIX)/bin on PATH if it is not there"

bench: deps
	$(call build_preset,release)
	./build/release/bench/capsim_bench --benchmark_min_time=0.2

bench-quick: deps
	$(call build_preset,release)
	./build/release/bench/capsim_bench --quick

asan: deps
	$(call build_preset,asan)
	$(CTEST) --preset asan -j $(JOBS)

docs-images: deps
	$(call build_preset,default)
	bash scripts/docs-images.sh build/default/cli/capsim

clean:
	rm -rf build
