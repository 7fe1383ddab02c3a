#!/usr/bin/env bash
# The README's test command, `npm test`: on a fresh Debian machine with Node and npm, installs what
# the suite needs when it is missing (Bun from npm, the rest from apt-get), then the dependencies,
# the type check and lint, and the whole suite (bun test). Stops with one line naming what it could
# not install. CONTRIBUTING.md says what each test lane proves.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
  echo "test: $*" >&2
  exit 1
}

if ! command -v bun >/dev/null 2>&1; then
  npm install -g bun >/dev/null 2>&1 || fail "could not install bun (npm install -g bun failed: run it as a user who may install global npm packages, e.g. root)"
fi

# Debian packages the suite drives, each with how to tell it is there.
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
missing=()
# scripts/client.sh, driven by the end-to-end tests, sends with curl and escapes with jq.
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v jq >/dev/null 2>&1 || missing+=(jq)
# The dashboard tests drive Debian's chromium through playwright-core (CHROMIUM_PATH for another).
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || missing+=(chromium)
# The PostgreSQL tests start throwaway servers on 127.0.0.1 with Debian's binaries, pgbouncer too.
[ -n "$pg_bin" ] || missing+=(postgresql)
[ -x /usr/sbin/pgbouncer ] || missing+=(pgbouncer)
# The alert tests' SMTP server makes a self-signed certificate with openssl.
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# The container image is built and run with podman (runc: crun fails in many VMs and CI runners).
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v runc >/dev/null 2>&1 || missing+=(runc)
# The systemd unit is checked with systemd-analyze; the release test reads the commit with git.
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
command -v git >/dev/null 2>&1 || missing+=(git)

apt_install() {
  if [ "$(id -u)" -ne 0 ]; then
    fail "missing $*; install it (sudo apt-get install $*) or run npm test as root"
  fi
  command -v apt-get >/dev/null 2>&1 || fail "missing $*; this machine has no apt-get: install it by hand"
  echo "test: installing $* with apt-get" >&2
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1 || true
    # One at a time, so the line names the package that would not install.
    for pkg in "$@"; do
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null 2>&1 || fail "could not install $pkg with apt-get"
    done
  fi
}

if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
fi

# High availability is tested with Debian's pg_auto_failover: its command and the server
# extension for the PostgreSQL version installed above.
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
pg_major=$(basename "$(dirname "$pg_bin")")
ha=()
command -v pg_autoctl >/dev/null 2>&1 || ha+=(pg-auto-failover-cli)
[ -e "/usr/lib/postgresql/$pg_major/lib/pgautofailover.so" ] || ha+=("postgresql-$pg_major-auto-failover")
if [ ${#ha[@]} -gt 0 ]; then
  apt_install "${ha[@]}"
fi

bun --version
bun install --frozen-lockfile
# Type check, import rules (dependency-cruiser) and unused code (knip): docs/architecture.md.
bun run lint
# A worker process per core: 11-16 minutes on 2 cores instead of 18-21 one file at a time (CONTRIBUTING.md).
bun test --parallel
