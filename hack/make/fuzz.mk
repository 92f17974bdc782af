# Fuzz campaign: every Go fuzz target, several in parallel processes (hack/fuzz.sh).
# Included by the main Makefile (-include hack/make/*.mk). Not part of `make test`, which
# runs only the committed seed corpora (testdata/fuzz), as plain go test does.
# See docs/fuzzing.md.

# -fuzztime of each target: a duration (30s, 10m) or a count of executions (500000x).
FUZZTIME ?= 1m
# Targets fuzzed at once (processes), and fuzzing workers per target (-parallel).
FUZZ_JOBS ?= $(shell nproc)
FUZZ_PARALLEL ?= 1
# Space-separated target names (e.g. "FuzzFreeze FuzzPolicy"); empty: all of them.
FUZZ_TARGETS ?=

##@ Fuzzing

.PHONY: fuzz
fuzz: ## Every fuzz target for FUZZTIME each (FUZZ_JOBS at once), then executions per target.
	FUZZTIME='$(FUZZTIME)' FUZZ_JOBS='$(FUZZ_JOBS)' FUZZ_PARALLEL='$(FUZZ_PARALLEL)' FUZZ_TARGETS='$(FUZZ_TARGETS)' hack/fuzz.sh

.PHONY: fuzz-list
fuzz-list: ## The fuzz targets make fuzz runs (package and name).
	@hack/fuzz.sh list
