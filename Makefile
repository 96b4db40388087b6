# sandlot — build, test, images. `make` builds build/sandlot and build/sandlot-init;
# `make test` runs unit tests then end-to-end tests (root); `make images` builds images.
CC      ?= cc
MUSLCC  ?= musl-gcc
BUILD   := build
PKGS    := libcjson libseccomp nettle
CFLAGS  ?= -O2 -g
# `make ... SAN=1`: everything but the static musl programs (sandlot-init, probe) built
# with ASan + UBSan into build-san/ (a sibling of build/, so the binary finds seccomp/ as
# ../seccomp as build/sandlot does); docs/testing.md, "Sanitizers".
FORTIFY := -D_FORTIFY_SOURCE=2
ifeq ($(SAN),1)
FORTIFY :=
BUILD   := build-san
CFLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
endif
CFLAGS  += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wshadow -Wformat=2 -Wno-format-truncation \
           -fstack-protector-strong $(FORTIFY) -D_GNU_SOURCE -Iruntime -Iapi -Iinit \
           $(shell pkg-config --cflags $(PKGS) libmicrohttpd)
LDLIBS  := $(shell pkg-config --libs $(PKGS)) -lpthread -ldl
ARCHIVE_LIBS := $(shell pkg-config --libs libarchive)

# archive_extract.c lives in sandlot-archive.so (see runtime/archive_dl.c); tests
# link it directly, in front of the library, so archive_dl.c is not pulled in.
ARCHIVE_SRC := runtime/archive_extract.c runtime/archive_write.c
# runtime/net.c lives in sandlot-net.so (libnl-route, libnftables; runtime/net_dl.c).
NET_SRC     := runtime/net.c
NET_LIBS    := $(shell pkg-config --libs libnl-route-3.0 libnftables)
# runtime/registry.c lives in sandlot-registry.so (libcurl; runtime/registry_dl.c).
REGISTRY_SRC := runtime/registry.c
RUNTIME_SRC := $(filter-out $(ARCHIVE_SRC) $(NET_SRC) $(REGISTRY_SRC),$(wildcard runtime/*.c))
ARCHIVE_OBJ := $(ARCHIVE_SRC:%.c=$(BUILD)/%.o)
RUNTIME_OBJ := $(RUNTIME_SRC:%.c=$(BUILD)/%.o)
CLI_SRC     := $(wildcard cli/*.c)
CLI_OBJ     := $(CLI_SRC:%.c=$(BUILD)/%.o)
# api/ is `sandlot serve`, built as sandlot-api.so (libmicrohttpd, gnutls: ~9 ms of
# loading no other verb should pay; runtime/dl.h). key.c (`key`) and view.c (the API's JSON
# shapes, which `ls --format json` and `inspect` print too) stay in the binary.
# The dashboard's files (ui/, docs/dashboard.md), bundled by esbuild and embedded in it.
UI_ASSETS   := build/ui/ui_assets.c
API_SRC     := $(filter-out api/key.c api/view.c,$(wildcard api/*.c)) $(wildcard api/compat/*.c) \
	       $(UI_ASSETS)
API_OBJ     := $(BUILD)/api/key.o $(BUILD)/api/view.o
UNIT_SRC    := $(wildcard tests/unit/test_*.c)
UNIT_BIN    := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
E2E_SRC     := $(wildcard tests/e2e/test_*.c)
E2E_BIN     := $(E2E_SRC:tests/e2e/%.c=$(BUILD)/tests/e2e_%)
E2E_COMMON  := $(wildcard tests/e2e/common.c)
# The harness's HTTP client (common.c) is libcurl.
E2E_LIBS    := $(shell pkg-config --libs libcurl)

.PHONY: all test unit e2e images clean format
all: $(BUILD)/sandlot $(BUILD)/sandlot-archive.so $(BUILD)/sandlot-api.so $(BUILD)/sandlot-init \
     $(BUILD)/probe $(BUILD)/sandlot-net.so $(BUILD)/sandlot-registry.so $(BUILD)/sandlot-oci

# runc's command line for containerd and podman (docs/oci.md): sandlot by another name.
$(BUILD)/sandlot-oci: $(BUILD)/sandlot
	ln -sf sandlot $@

$(BUILD)/%.o: %.c $(wildcard runtime/*.h cli/*.h init/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/libsandlot.a: $(RUNTIME_OBJ)
	ar rcs $@ $^

# --whole-archive: the modules call runtime functions the CLI itself may not use.
# libseccomp and nettle are linked in (their Debian -dev packages ship the archives):
# every CLI call loads two shared libraries fewer, ~0.4 ms of a 3 ms process start here
# (docs/bench.md). The modules load libnettle.so for what the binary does not use.
BIN_LIBS := $(shell pkg-config --libs libcjson) -Wl,-Bstatic -lseccomp -lnettle -Wl,-Bdynamic \
	    -lpthread -ldl
$(BUILD)/sandlot: $(CLI_OBJ) $(API_OBJ) $(BUILD)/libsandlot.a
	$(CC) $(CFLAGS) -Wl,--export-dynamic -o $@ $(CLI_OBJ) $(API_OBJ) \
		-Wl,--whole-archive $(BUILD)/libsandlot.a -Wl,--no-whole-archive $(BIN_LIBS)

$(BUILD)/sandlot-api.so: $(API_SRC) $(wildcard api/*.h api/compat/*.h runtime/*.h) \
		$(wildcard api/compat/*.py api/compat/*.js)
	$(CC) $(CFLAGS) -fPIC -shared -Wl,-Bsymbolic -o $@ $(API_SRC) \
		$(shell pkg-config --libs libmicrohttpd zlib nettle)

# api/ is `sandlot serve` (libmicrohttpd); cli/serve.c includes its header.
$(BUILD)/api/%.o: api/%.c $(wildcard runtime/*.h api/*.h init/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<
$(BUILD)/cli/serve.o: $(wildcard api/*.h)

# The same sources as sandlot-api.so, as an archive for unit tests of api/'s parsers.
API_LIB_OBJ := $(API_SRC:%.c=$(BUILD)/%.o)
$(filter $(BUILD)/api/compat/%,$(API_LIB_OBJ)): $(wildcard api/compat/*.h)
$(BUILD)/api/compat/e2b_interp.o: api/compat/e2b_repl.py api/compat/e2b_repl_rich.py api/compat/e2b_repl.js \
				 api/compat/e2b_repl.R api/compat/e2b_repl.java
API_LIBS    := $(shell pkg-config --libs libmicrohttpd zlib nettle)
$(BUILD)/libsandlot-api.a: $(API_LIB_OBJ)
	ar rcs $@ $^
# The unit tests of api/ code link it from there, as test_<x> links the runtime.
API_UNIT_BIN := $(BUILD)/tests/test_api_parse $(BUILD)/tests/test_ports_parse
$(API_UNIT_BIN): $(BUILD)/libsandlot-api.a $(API_OBJ)
$(API_UNIT_BIN): UNIT_EXTRA := $(BUILD)/libsandlot-api.a $(API_OBJ) $(API_LIBS)
# The network tests read the nftables ruleset before and after (tests/e2e/netlab.c).
NETLAB_BIN := $(BUILD)/tests/e2e_test_net $(BUILD)/tests/e2e_test_net_names
$(NETLAB_BIN): LDLIBS += $(shell pkg-config --libs libnftables)
$(NETLAB_BIN): E2E_EXTRA := tests/e2e/netlab.c
$(NETLAB_BIN): tests/e2e/netlab.c tests/e2e/netlab.h

# Loaded by the sandlot binary only when it reads an archive; it uses the binary's
# own sl_fail/fs_remove_tree/sl_log (exported), and binds its own symbols first.
$(BUILD)/sandlot-archive.so: $(ARCHIVE_SRC) runtime/archive_extract.h runtime/archive_write.h
	$(CC) $(CFLAGS) -fPIC -shared -Wl,-Bsymbolic -o $@ $(ARCHIVE_SRC) $(ARCHIVE_LIBS) \
		$(shell pkg-config --libs nettle)

# Sandbox networking, loaded only when a sandbox has its network on (dl.h).
$(BUILD)/sandlot-net.so: $(NET_SRC) $(wildcard runtime/*.h)
	$(CC) $(CFLAGS) $(shell pkg-config --cflags libnl-route-3.0 libnftables) -fPIC -shared \
		-Wl,-Bsymbolic -o $@ $(NET_SRC) $(NET_LIBS)

# The registry client, loaded only by an image pull (dl.h).
$(BUILD)/sandlot-registry.so: $(REGISTRY_SRC) runtime/registry.h runtime/err.h
	$(CC) $(CFLAGS) $(shell pkg-config --cflags libcurl) -fPIC -shared -Wl,-Bsymbolic -o $@ \
		$(REGISTRY_SRC) $(shell pkg-config --libs libcurl libcjson)

# The dashboard (ui/): its JavaScript dependencies from npm at the versions of the committed
# lockfile (npm ci, run again only when the lockfile changes: `make` works offline after the
# first build), bundled with Debian's esbuild, then embedded as C arrays (ui/embed.py). The
# same build/ui for SAN=1, as the images.
UI_NPM := ui/node_modules/.sandlot-lock-sha
$(UI_NPM): ui/package-lock.json
	cd ui && npm ci --no-audit --no-fund --loglevel=error
	sha256sum ui/package-lock.json | cut -c1-64 >$@
build/ui/app.js: $(UI_NPM) $(wildcard ui/src/*)
	@mkdir -p build/ui
	esbuild ui/src/main.js --bundle --minify --target=es2020 --outfile=$@ --log-level=warning
build/ui/app.css: build/ui/app.js
$(UI_ASSETS): build/ui/app.js build/ui/app.css ui/index.html ui/embed.py
	python3 ui/embed.py $@ ui/index.html build/ui/app.js build/ui/app.css

# pid 1 of every sandbox: static (musl), no shared libraries, tiny.
$(BUILD)/sandlot-init: init/init.c init/proto.h
	@mkdir -p $(BUILD)
	$(MUSLCC) -static -Os -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE \
		-o $@ init/init.c
	strip $@

# Each warm executeCode call's execution inside a sandbox (init/coderun.c): static, tiny,
# compiled into runtime/code.o with the runner it talks to.
$(BUILD)/sandlot-coderun: init/coderun.c
	@mkdir -p $(BUILD)
	$(MUSLCC) -static -Os -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE \
		-o $@ init/coderun.c
	strip $@
# The warm node runner's native part (init/coderun_node.c), loaded by node in a sandbox:
# no libc of ours (it binds to node's), so one build serves glibc and musl images.
$(BUILD)/sandlot-coderun.node: init/coderun_node.c
	@mkdir -p $(BUILD)
	$(CC) -shared -fPIC -nostdlib -Os -fno-stack-protector -std=gnu11 -Wall -Wextra -Werror \
		-o $@ init/coderun_node.c
	strip $@
$(BUILD)/runtime/code.o: runtime/code_runner.py $(BUILD)/sandlot-coderun $(BUILD)/sandlot-coderun.node
$(BUILD)/runtime/code.o: CFLAGS += -DSL_CODERUN_BIN='"$(BUILD)/sandlot-coderun"' \
	-DSL_CODERUN_NODE='"$(BUILD)/sandlot-coderun.node"'

# A static probe that tries forbidden syscalls (used by e2e tests, in and out of sandboxes).
$(BUILD)/probe: tests/probe/probe.c
	@mkdir -p $(BUILD)
	$(MUSLCC) -static -O2 -Wall -Werror -D_GNU_SOURCE -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/libsandlot.a $(ARCHIVE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(UNIT_EXTRA) $(ARCHIVE_OBJ) $(BUILD)/libsandlot.a $(LDLIBS) \
		$(ARCHIVE_LIBS) -lcmocka -lcrypto

$(BUILD)/tests/e2e_%: tests/e2e/%.c $(E2E_COMMON) tests/e2e/common.h $(BUILD)/libsandlot.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/e2e -o $@ $< $(E2E_COMMON) $(E2E_EXTRA) $(BUILD)/libsandlot.a $(LDLIBS) $(ARCHIVE_LIBS) \
		$(E2E_LIBS) -lcmocka

# The test_api_*.c programs (one per route group of the API) share api_common.c.
E2E_API_BIN := $(filter $(BUILD)/tests/e2e_test_api_%,$(E2E_BIN)) $(BUILD)/tests/e2e_load
$(E2E_API_BIN): tests/e2e/api_common.c tests/e2e/api_common.h
$(E2E_API_BIN): E2E_EXTRA := tests/e2e/api_common.c
# test_exec reads executions in the API's shape (api/view.c, in the binary beside key.c).
$(BUILD)/tests/e2e_test_exec: E2E_EXTRA := $(BUILD)/api/view.o
$(BUILD)/tests/e2e_test_exec: $(BUILD)/api/view.o

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

# The image tarballs are the same for every build: build/images, also under SAN=1
# (build-san/images is a link to it, where the tests look beside the binary).
IMG := build/images
images: $(IMG)/busybox.tar
ifeq ($(SAN),1)
images: $(BUILD)/images
$(BUILD)/images:
	@mkdir -p $(BUILD) $(IMG)
	ln -sfn ../$(IMG) $@
endif

$(IMG)/busybox.tar: images/busybox/build.sh
	@mkdir -p $(dir $@)
	sh images/busybox/build.sh $@

# The images `make images` makes: `make images IMAGES=busybox` (or `make images-busybox`)
# leaves out the Debian-based default image, which needs root and the Debian mirror.
IMAGES ?= busybox default
.PHONY: images-busybox images-default images-code-interpreter
images: $(IMAGES:%=images-%)
images-busybox: $(IMG)/busybox.tar

# build.sh skips the build when the tarball's recipe hash is current (docs/default-image.md).
# `make images` only builds tarballs (tests import them into their own state roots);
# `make install-images` imports them into $SANDLOT_STATE_DIR (default /var/lib/sandlot),
# skipping an image that already has these bytes.
images-default:
	@bash images/default/build.sh $(IMG)/default.tar.zst

# The E2B code interpreter's image (docs/code-interpreter-image.md): the default image
# plus numpy, PIL, matplotlib, pandas, R and a JDK. Not part of `make images`.
images-code-interpreter:
	@bash images/code-interpreter/build.sh $(IMG)/code-interpreter.tar.zst

.PHONY: install-images
install-images: all images
	@for img in busybox:$(IMG)/busybox.tar default:$(IMG)/default.tar.zst \
		code-interpreter:$(IMG)/code-interpreter.tar.zst; do \
		n=$${img%%:*}; f=$${img#*:}; [ -f "$$f" ] || continue; \
		d=$$(sha256sum "$$f" | cut -c1-12); \
		$(BUILD)/sandlot image ls 2>/dev/null | grep -q "^$$n  *sha256:$$d" || \
			$(BUILD)/sandlot image import "$$n" "$$f"; done

# Suites that make sandboxes take a host-wide lock: their leak checks look at the whole
# host, so two of them (or a bench) must never run at once, also from two checkouts.
# -o: the lock stays with flock(1), not with what the suite starts, so a daemon left
# running by a killed suite (or a debugging session) cannot hold it for everyone.
LOCK ?= flock -o /tmp/sandlot-test.lock

e2e: all images $(E2E_BIN)
	@set -e; for t in $(E2E_BIN); do echo "== $$t"; \
		SANDLOT_BUILD=$(BUILD) LOCK="$(LOCK)" LOGS=$(BUILD)/logs bash tests/e2e/run-suite.sh $$t; done

# The sanitizers' short pass, part of `make test`: the unit suite and the API end-to-end
# suites built with ASan + UBSan (build-san/). `make test SAN=1` runs every suite so.
SAN_E2E := sandboxes exec files spares daemon
.PHONY: san-short e2e-api
e2e-api: all images $(SAN_E2E:%=$(BUILD)/tests/e2e_test_api_%)
	@set -e; for t in $(SAN_E2E:%=$(BUILD)/tests/e2e_test_api_%); do echo "== $$t"; \
		SANDLOT_BUILD=$(BUILD) LOCK="$(LOCK)" LOGS=$(BUILD)/logs bash tests/e2e/run-suite.sh $$t; done
san-short:
	@$(MAKE) --no-print-directory SAN=1 unit
	@$(MAKE) --no-print-directory SAN=1 e2e-api

# Load and crash recovery (tests/e2e/load.c): LOAD_SANDBOXES sandboxes with live
# executions, LOAD_CLIENTS API clients for LOAD_SECONDS, once against one daemon (no
# leak) and once with the daemon killed -9 twice. `make load-short` (part of `make test`)
# is the same suite, 10 s per phase.
LOAD_SECONDS ?= 60
LOAD_SANDBOXES ?= 50
LOAD_CLIENTS ?= 20
.PHONY: load load-short
load: all images $(BUILD)/tests/e2e_load
	@SANDLOT_LOAD_SECONDS=$(LOAD_SECONDS) SANDLOT_LOAD_SANDBOXES=$(LOAD_SANDBOXES) \
		SANDLOT_LOAD_CLIENTS=$(LOAD_CLIENTS) SANDLOT_BUILD=$(BUILD) LOCK="$(LOCK)" \
		LOGS=$(BUILD)/logs bash tests/e2e/run-suite.sh $(BUILD)/tests/e2e_load
load-short:
	@$(MAKE) --no-print-directory load LOAD_SECONDS=10

# Compatibility suites: the real SDKs (npm, committed lockfiles) against a real daemon.
COMPAT_DIRS := $(patsubst %/package.json,%,$(wildcard tests/compat/*/package.json))
.PHONY: compat
compat: all images
	@set -e; for d in $(COMPAT_DIRS); do SANDLOT_BUILD=$(abspath $(BUILD)) $(LOCK) bash tests/compat/run-suite.sh $$d; done

# sandlot-oci under containerd and against runc (tests/e2e/oci.sh), and the Kubernetes
# manifests against agent-sandbox's CRDs and containerd's reading of the fragment.
.PHONY: oci-e2e k8s-check
oci-e2e: all images
	SANDLOT_BUILD=$(BUILD) $(LOCK) bash tests/e2e/oci.sh
k8s-check:
	python3 tests/k8s/validate.py
	sh tests/k8s/containerd-fragment.sh

test: all
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory k8s-check
	@$(MAKE) --no-print-directory oci-e2e
	@$(MAKE) --no-print-directory fuzz-short
	@$(MAKE) --no-print-directory e2e
	@$(MAKE) --no-print-directory load-short
ifneq ($(SAN),1)
	@$(MAKE) --no-print-directory san-short
endif
	@$(MAKE) --no-print-directory compat
	@echo "make test: all suites passed"

format:
	clang-format -i runtime/*.[ch] api/*.[ch] api/compat/*.[ch] cli/*.[ch] init/*.[ch] tests/*/*.[ch]

clean:
	rm -rf $(BUILD)

# ---- fuzzing (tests/fuzz/, docs/testing.md) ----
# libFuzzer harnesses, one per parser of outside input. Their own objects under
# build/fuzz/ (clang, ASan + UBSan, fuzzer-instrumented), never the gcc ones above.
# `make fuzz` runs each target FUZZ_SECONDS; `make fuzz-short` (part of `make test`)
# replays its committed corpus and crash inputs, then FUZZ_SHORT_RUNS inputs drawn from a
# fixed seed (the same on every machine: tests/fuzz/run.sh).
FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 60
FUZZ_SHORT_RUNS ?= 5000
FUZZ_DIR      := $(BUILD)/fuzz
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS   := -O1 -g -fno-omit-frame-pointer $(FUZZ_SAN) -std=gnu11 -Wall -Wextra -Werror \
		 -Wno-unused-parameter -Wno-missing-field-initializers -D_GNU_SOURCE -Iruntime -Iapi -Iinit \
		 $(shell pkg-config --cflags $(PKGS) libmicrohttpd)
# Archive extraction is linked in directly (not archive_dl.c); networking and the registry
# client (libcurl) stay out.
FUZZ_LIB_SRC  := $(filter-out runtime/archive_dl.c $(NET_SRC) $(REGISTRY_SRC),$(wildcard runtime/*.c)) \
		 $(wildcard api/*.c api/compat/*.c) $(UI_ASSETS)
FUZZ_LIB_OBJ  := $(FUZZ_LIB_SRC:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_LIBS     := $(LDLIBS) $(ARCHIVE_LIBS) $(shell pkg-config --libs libmicrohttpd zlib)
FUZZ_TARGETS  := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN      := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)

$(FUZZ_DIR)/obj/%.o: %.c $(wildcard runtime/*.h api/*.h api/compat/*.h init/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<
$(FUZZ_DIR)/obj/api/compat/e2b_interp.o: api/compat/e2b_repl.py api/compat/e2b_repl_rich.py \
					  api/compat/e2b_repl.js api/compat/e2b_repl.R api/compat/e2b_repl.java
$(FUZZ_DIR)/obj/runtime/code.o: runtime/code_runner.py $(BUILD)/sandlot-coderun \
	$(BUILD)/sandlot-coderun.node
$(FUZZ_DIR)/obj/runtime/code.o: FUZZ_CFLAGS += -DSL_CODERUN_BIN='"$(BUILD)/sandlot-coderun"' \
	-DSL_CODERUN_NODE='"$(BUILD)/sandlot-coderun.node"'

$(FUZZ_DIR)/libsandlot-fuzz.a: $(FUZZ_LIB_OBJ)
	ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_DIR)/libsandlot-fuzz.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_EXTRA) \
		$(FUZZ_DIR)/libsandlot-fuzz.a $(FUZZ_LIBS)

# The create parser runs up to the pool and sandbox_create, which the harness stands in
# for, as it does for the façades' snapshot look-up and the host's disk checks.
$(FUZZ_DIR)/fuzz_json: FUZZ_EXTRA := -Wl,--wrap=sandbox_create -Wl,--wrap=api_pool_take \
	-Wl,--wrap=snapshot_get -Wl,--wrap=sandbox_create_admit

.PHONY: fuzz fuzz-short fuzz-build
fuzz-build: $(FUZZ_BIN)

# Replay every committed input (corpus and crashes) as a plain run, then fuzz.
fuzz: $(FUZZ_BIN)
	@set -e; for t in $(FUZZ_TARGETS); do \
		FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh $(FUZZ_DIR) $$t; done

fuzz-short: $(FUZZ_BIN)
	@set -e; for t in $(FUZZ_TARGETS); do \
		FUZZ_RUNS=$(FUZZ_SHORT_RUNS) bash tests/fuzz/run.sh $(FUZZ_DIR) $$t; done

# `make bench` / `make bench-quick`: sandlot side by side with crun and bwrap (root; see
# docs/bench.md). bench-driver times commands and HTTP requests, interleaved.
.PHONY: bench bench-quick
$(BUILD)/bench-driver: bench/driver.c runtime/cleanup.h
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $@ bench/driver.c $(shell pkg-config --libs libcjson) -lm

# The runtime's own exec cost (exec_start, + exec_wait), linked to the library.
$(BUILD)/bench-exec-latency: bench/exec_latency.c $(BUILD)/libsandlot.a $(ARCHIVE_OBJ)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $@ bench/exec_latency.c $(ARCHIVE_OBJ) $(BUILD)/libsandlot.a $(LDLIBS) \
		$(ARCHIVE_LIBS) -lm

bench: all images $(BUILD)/bench-driver $(BUILD)/bench-exec-latency
	$(LOCK) bash bench/run.sh full
	SANDLOT_BUILD=$(BUILD) $(LOCK) bash bench/oci.sh

bench-quick: all images $(BUILD)/bench-driver $(BUILD)/bench-exec-latency
	$(LOCK) bash bench/run.sh quick
