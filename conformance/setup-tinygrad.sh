#!/usr/bin/env bash
# tinygrad's CPU device compiles its kernels with clang (writing a file copies tensors through
# it): install Debian's clang when it is missing and this runs as root; otherwise say so.
# Exit status 0 when clang is there afterwards, 1 when it is not (run-all.sh then skips the
# tinygrad writer and says why).
set -uo pipefail
if command -v clang > /dev/null; then
  echo "clang $(clang --version | head -n 1)"
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
  apt-get install -y -qq clang > /dev/null 2>&1 || { apt-get update -qq > /dev/null 2>&1 && apt-get install -y -qq clang > /dev/null 2>&1; }
fi
if command -v clang > /dev/null; then
  echo "clang $(clang --version | head -n 1)"
  exit 0
fi
echo "setup-tinygrad.sh: no clang (install it: apt-get install clang); tinygrad's CPU device needs it" >&2
exit 1
