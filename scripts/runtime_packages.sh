#!/usr/bin/env bash
# Prints, one per line, the Debian packages that hold the shared libraries
# the given binaries load (ldd), so that a runtime image installs only those
# (deploy/docker/Dockerfile). Fails if a library is not
# found or belongs to no package.
#   bash scripts/runtime_packages.sh BINARY...
set -euo pipefail
(($#)) || { echo "usage: $0 BINARY..." >&2; exit 2; }

libraries=()
for binary in "$@"; do
  linked="$(ldd "$binary")" || { echo "runtime_packages: ldd $binary failed" >&2; exit 1; }
  while read -r line; do
    case "$line" in
      *"=> not found"*) echo "runtime_packages: $binary: ${line%% *} not found" >&2; exit 1 ;;
      *"=> /"*) path="${line#*=> }"; libraries+=("${path%% (*}") ;;
      /*) libraries+=("${line%% (*}") ;;  # the dynamic loader
    esac
  done <<<"$linked"
done
((${#libraries[@]})) || { echo "runtime_packages: $* load no shared library" >&2; exit 1; }

for library in "${libraries[@]}"; do
  # dpkg knows a file by the path its package installed; with merged /usr,
  # ldd may report /lib/... for a file dpkg lists as /usr/lib/... or back.
  owner=""
  for candidate in "$library" "$(readlink -f "$library")" "/usr${library#/usr}" "${library#/usr}"; do
    owner="$(dpkg-query -S "$candidate" 2>/dev/null | grep -v '^diversion' | head -n 1 || true)"
    [[ -n "$owner" ]] && break
  done
  [[ -n "$owner" ]] || { echo "runtime_packages: no package holds $library" >&2; exit 1; }
  # "pkg: /path", or "pkg1, pkg2: /path" for a file of several packages.
  packages="${owner%%: *}"
  echo "${packages//, /$'\n'}"
done | sort -u
