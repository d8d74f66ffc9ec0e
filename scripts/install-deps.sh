#!/usr/bin/env bash
# Install the Debian packages trainsim builds and tests with, when missing.
# Runs apt-get directly as root, through sudo otherwise; does nothing when
# everything is present. Optional packages (chromium, clang) are attempted
# but their absence only skips the tests that need them.
set -eu
required="cmake gcc make pkg-config libjansson-dev libcmocka-dev libprotobuf-c-dev protobuf-c-compiler libopenmpi-dev openmpi-bin"
optional="chromium clang libclang-rt-14-dev valgrind"
missing=""
for p in $required $optional; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else
  echo "install-deps: missing packages:$missing (not root and no sudo)" >&2; exit 1; fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
req_missing=""
for p in $required; do case " $missing " in *" $p "*) req_missing="$req_missing $p";; esac; done
[ -n "$req_missing" ] && $SUDO apt-get install -y -qq --no-install-recommends $req_missing
for p in $optional; do
  case " $missing " in *" $p "*)
    $SUDO apt-get install -y -qq --no-install-recommends "$p" || echo "install-deps: optional $p not installed" >&2;;
  esac
done
exit 0
