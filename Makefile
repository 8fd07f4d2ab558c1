# The two commands a newcomer needs: `make demo` and `make test`. Both install what is
# missing (scripts/setup.sh, Debian packages), build, then run.
BUILD ?= build
JOBS ?= 2
# `make demo` alone installs the demo's packages only (scripts/setup.sh demo): a first profile
# should not wait for Chromium, Go and Node. Every other goal installs everything
# (`SETUP=demo` or `SETUP=test` chooses by hand).
SETUP ?= $(if $(filter-out demo,$(MAKECMDGOALS)),test,$(if $(MAKECMDGOALS),demo,test))
FIRMWARE_BUILD := $(BUILD)/firmware-ref-build
# ccache, when installed, makes rebuilds and second checkouts cheap; it is not required.
# The base directory makes paths relative, so that two checkouts share cached objects.
CCACHE := $(shell command -v ccache 2>/dev/null)
LAUNCHER := $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all setup build host firmware test demo bench clean

all: build

setup:
	@bash scripts/setup.sh $(SETUP)

host: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(LAUNCHER) > $(BUILD).configure.log 2>&1 || (cat $(BUILD).configure.log; exit 1)
	@cmake --build $(BUILD) -j$(JOBS)

firmware: setup
	@cmake -S firmware-ref -B $(FIRMWARE_BUILD) -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/firmware-ref/cmake/arm-none-eabi.cmake \
		-DFIRMWARE_OUTPUT_DIR=$(CURDIR)/$(BUILD)/firmware-ref > $(BUILD).firmware-configure.log 2>&1 \
		|| (cat $(BUILD).firmware-configure.log; exit 1)
	@cmake --build $(FIRMWARE_BUILD) -j$(JOBS)

# The optional parts (the VS Code extension, the Rust images) are built when their tools work;
# the build names each one it left out, and why, in one line (scripts/unbuilt.sh).
build: host firmware
	@bash scripts/unbuilt.sh $(BUILD)

# ctest's own output, then the closing lines: what failed, what was skipped and why, and
# "tests: N passed, N failed, N skipped" (scripts/test_summary.py, from ctest's JUnit reports).
# On Debian 12 the QEMU-driven labels run a second time, against QEMU 10 (bookworm-backports,
# unpacked under $(BUILD)/qemu10 by scripts/debian-qemu.sh; MCUPROF_QEMU names it to the tests);
# their results are listed as "qemu10: NAME".
QEMU_LABELS := ^(integration|live|vprobe|faults)$$
RESULTS := $(abspath $(BUILD))/ctest-results
test: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --output-junit $(RESULTS).xml; status=$$?; \
		reports=$(RESULTS).xml; rm -f $(RESULTS)-qemu10.xml; \
		if qemu10=$$(bash $(CURDIR)/scripts/debian-qemu.sh second $(abspath $(BUILD))/qemu10); then \
		  if [ -n "$$qemu10" ]; then \
		    MCUPROF_QEMU=$$qemu10 ctest --output-on-failure -j$(JOBS) -L '$(QEMU_LABELS)' \
		      --output-junit $(RESULTS)-qemu10.xml || status=1; \
		    reports="$$reports qemu10=$(RESULTS)-qemu10.xml"; \
		  fi; \
		else status=1; reports="$$reports qemu10=$(RESULTS)-qemu10.xml"; fi; \
		python3 $(CURDIR)/scripts/test_summary.py $$reports && exit $$status

demo: build
	@bash scripts/demo.sh $(BUILD)

bench: build
	@bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD).*.log
