# tablekit: the two commands of the README, plus benchmarks.
# Needs Go >= 1.24 and Node.js >= 20 with npm; everything else is installed
# here. (Azurite 3.37 declares Node.js >= 22, but its blob, queue and table
# services run on Node.js 20: the whole test suite passes there.)

GO      ?= go
AZURITE := node_modules/azurite/dist/src/azurite.js

.PHONY: demo test soak bench lint emulator capabilities drift api

# The targets below install the emulator only when they will start it: not
# when AZURE_STORAGE_CONNECTION_STRING names an account or TABLEKIT_AZURITE an
# Azurite, and for tests not under TABLEKIT_NO_EMULATOR=1 outside CI either
# (they skip; in CI that variable is ignored).
ifeq ($(AZURE_STORAGE_CONNECTION_STRING)$(TABLEKIT_AZURITE),)
RUN_EMULATOR := $(AZURITE)
endif
TEST_EMULATOR := $(RUN_EMULATOR)
ifeq ($(TABLEKIT_NO_EMULATOR)$(CI),1)
TEST_EMULATOR :=
endif

# The pinned emulator (package-lock.json), installed into ./node_modules.
emulator: $(AZURITE)
# npm's output (a page of warnings, about Node.js engines among others) is
# shown only when the install fails. A registry connection that stalls fails
# after a minute (npm's default is five, and it does not retry an idle
# timeout), and the whole install is tried up to four times, 15, 30 and 45 s
# apart, reusing what npm's cache already holds.
NPM_CI := npm ci --no-audit --no-fund --prefer-offline --fetch-timeout=60000
$(AZURITE): package.json package-lock.json
	@echo "Installing the pinned Azurite emulator into node_modules (npm ci)"
	@for attempt in 1 2 3 4; do \
	  if out=$$($(NPM_CI) 2>&1); then touch $@; exit 0; fi; \
	  printf '%s\n' "$$out" | grep -E '^npm (error|ERR)' >&2; \
	  echo "npm ci failed (attempt $$attempt of 4)" >&2; \
	  if [ $$attempt -lt 4 ]; then sleep $$((attempt * 15)); fi; \
	done; \
	printf '%s\n' "$$out" >&2; exit 1

# Runs the narrated tour of every pattern against a fresh emulator, which the
# tour starts on free ports and stops when it ends.
demo: $(RUN_EMULATOR)
	$(GO) run ./examples/tour

# Format check, vet, then every test (integration tests included) with -race;
# the allocation test without -race (which makes allocation counts vary); then
# every test again (without -race: the first run already ran each TestCosmos
# test on both services with it) with every test rig under the Cosmos DB
# simulation (internal/cosmosim: results in no key order, Cosmos DB's limits);
# the few tests of Table Storage's own order, limits and round trips skip
# there (testrig.StorageOnly), each naming its Cosmos DB counterpart. The
# harness's own tests (patterns/tabletest, internal/emulator: emulator
# install, environment) test no table service and run once. Among the
# tests, internal/cmd/apisnapshot fails when the exported API differs from
# api/tablekit.txt (see api, below) or from the verb table in
# patterns/table's doc.
test: $(TEST_EMULATOR)
	@unformatted="$$(gofmt -l .)"; if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run 'AllocatesNothing' ./patterns/table
	TABLEKIT_PROFILE=cosmos $(GO) test -count=1 $$($(GO) list ./... | grep -v -e '/patterns/tabletest$$' -e '/internal/emulator$$')

# Rewrites api/tablekit.txt, the snapshot of the exported API that make test
# checks, and the verb table in patterns/table's doc (which packages have
# each verb), from the code; then prints the exported identifiers per
# package. Name every change it shows (git diff api/) in CHANGELOG.md.
api:
	$(GO) run ./internal/cmd/apisnapshot -w
	$(GO) test -count=1 -run '^TestVerbTable$$' ./internal/cmd/apisnapshot -update
	$(GO) run ./internal/cmd/apisnapshot -count

# The capability matrix (pattern x table service) from what the tests
# prove: the TestCosmos tests, each run on every service this machine
# reaches (Azurite and the Cosmos DB simulation, or the account of
# AZURE_STORAGE_CONNECTION_STRING), claim what they show; a claim counts
# only when its test passes (internal/cmd/capabilities).
capabilities: SHELL := /bin/bash
capabilities: .SHELLFLAGS := -o pipefail -c
capabilities: $(TEST_EMULATOR)
	$(GO) test -count=1 -json -run 'Cosmos' ./... | $(GO) run ./internal/cmd/capabilities

# The randomized model tests (internal/modelcheck) with thousands of steps
# instead of make test's few dozen; TABLEKIT_SEED=n replays a failure. The
# filter keeps the tests' names and results and every line a test logs (the
# seed, the outcome counts, a failure's step, operation and state), and
# drops the PAUSE/CONT noise of parallel tests. Then the SDK drift check
# (drift, below).
soak: SHELL := /bin/bash
soak: .SHELLFLAGS := -o pipefail -c
soak: $(TEST_EMULATOR)
	TABLEKIT_SOAK=1 $(GO) test -race -count=1 -timeout 60m -run 'Model' -v ./... 2>&1 | grep -E '^(=== RUN|--- |ok|FAIL|PASS|panic:)|^ +[^ ]'
	bash .ci/drift

# SDK drift: the core's tests (and those of the packages on queues and
# blobs) in a temporary copy of the module with azcore, aztables, azblob
# and azqueue raised to the newest versions the Go module proxy serves,
# which a user's go.mod may select. Also run by soak.
drift: $(TEST_EMULATOR)
	bash .ci/drift

# Benchmarks against fresh emulators (no -race): every comparison runs
# BENCHCOUNT times, then .ci/benchtable.awk prints the side-by-side summary
# (median [min..max]) of tablekit, raw aztables and the emulator's ceiling,
# and the targets (see BENCHMARKS.md), then the pattern packages' benchmarks
# against their hand-written equivalents. About 20 minutes on 2 cores;
# TABLEKIT_BENCH_LARGE=1 adds 100,000-entity loads, scans and period drops
# (much longer).
BENCHCOUNT ?= 3
bench: SHELL := /bin/bash
bench: .SHELLFLAGS := -o pipefail -c
bench: $(RUN_EMULATOR)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x ./retry | tee bench.out
	$(GO) test -run '^$$' -bench 'Codec|MixedDecode' -benchmem -count $(BENCHCOUNT) ./patterns/table | tee -a bench.out
	$(GO) test -run '^$$' -bench 'PointOps' -benchmem -benchtime 1000x -count $(BENCHCOUNT) ./patterns/table | tee -a bench.out
	$(GO) test -run '^$$' -bench 'ClientWork' -benchmem -count $(BENCHCOUNT) ./patterns/table | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Ceiling|BulkLoad|Stream' -benchmem -benchtime 8x -count $(BENCHCOUNT) -timeout 3h ./patterns/table | tee -a bench.out
	$(GO) test -run '^$$' -bench 'TypesQuery' -benchtime 50x -count $(BENCHCOUNT) ./patterns/table | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Latest' -benchtime 10x -count $(BENCHCOUNT) -timeout 1h ./patterns/logtail | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Append' -benchtime 1000x -count $(BENCHCOUNT) ./patterns/logtail | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Add' -benchtime 400x -count $(BENCHCOUNT) ./patterns/dataseries | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Wide' -benchmem -benchtime 20x -count $(BENCHCOUNT) ./patterns/wideentity | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Worker' -benchtime 500x -count $(BENCHCOUNT) ./patterns/eventual | tee -a bench.out
	$(GO) test -run '^$$' -bench . -benchtime 200x -count $(BENCHCOUNT) ./patterns/secondaryindex | tee -a bench.out
	$(GO) test -run '^$$' -bench 'DropVsDelete' -benchtime 3x -count $(BENCHCOUNT) -timeout 1h ./patterns/rotation | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Insert' -benchtime 1000x -count $(BENCHCOUNT) ./patterns/rotation | tee -a bench.out
	$(GO) test -run '^$$' -bench 'HotInsert|RangeMerge' -benchtime 3x -count $(BENCHCOUNT) ./patterns/buckets | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Large' -benchtime 40x -count $(BENCHCOUNT) ./patterns/largeentity | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Log' -benchtime 2x -count $(BENCHCOUNT) -timeout 1h ./patterns/bloblog | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Lookup' -benchtime 10x -count $(BENCHCOUNT) ./patterns/indexentity | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Contention$$' -benchtime 300x -count $(BENCHCOUNT) ./patterns/indexentity | tee -a bench.out
	$(GO) test -run '^$$' -bench 'ContentionBurst' -benchtime 20x -count $(BENCHCOUNT) ./patterns/indexentity | tee -a bench.out
	$(GO) test -run '^$$' -bench 'EncryptedCodec' -benchmem -count $(BENCHCOUNT) ./patterns/encryption | tee -a bench.out
	$(GO) test -run '^$$' -bench 'EncryptedPointOps' -benchmem -benchtime 1000x -count $(BENCHCOUNT) ./patterns/encryption | tee -a bench.out
	$(GO) test -run '^$$' -bench 'Directory' -benchtime 100x -count $(BENCHCOUNT) ./examples/directory | tee -a bench.out
	@echo; awk -f .ci/benchtable.awk bench.out

# staticcheck, installed into ./bin at a pinned version.
lint:
	GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2
	./bin/staticcheck ./...
