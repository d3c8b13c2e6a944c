#!/usr/bin/env bash
# The whole test suite: sets up a fresh machine, builds gpumem, runs the
# googletest suite and the tools' golden tests ("make check"), UCX's own
# googletest families on gpumem's transports ("make check-ucx-gtest"),
# UCX's own CUDA transports on the emulated CUDA ("make check-ucx-cuda"),
# the OSU micro-benchmarks through a CUDA-aware Open MPI ("make check-osu"),
# checks the source distribution ("make distcheck"), and runs the RDMA tests
# in a soft-RoCE VM ("make check-vm", test/vm/run), and the MPI job across
# two such VMs ("make check-vm2", test/vm/run --two).
set -euo pipefail
cd "$(dirname "$0")/.."

./contrib/setup.sh
# A test build: the cuda driver's fault injection is compiled in (distcheck
# builds the plugin as it is installed, without it)
./contrib/build.sh --enable-fault-injection
make -j2 check
# UCX's own googletest families on gpumem's transports
make check-ucx-gtest
# UCX's own cuda_copy and cuda_ipc on the emulated CUDA
make check-ucx-cuda
# The OSU micro-benchmarks on device buffers through a CUDA-aware Open MPI
# (built once into the set-up cache), on emulated GPUs
make check-osu
make -j2 distcheck
# The tests that need a real RDMA device, against soft-RoCE in a VM
make check-vm
# Two machines: an MPI job of device buffers across them, machine identity,
# a peer that dies
make check-vm2
