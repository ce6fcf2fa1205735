#!/usr/bin/env bash
# The aggregator must not carry the client transport (streams, reconnect
# threads, inboxes): it shares only entrograd_wire and entrograd_common with
# the client. Checks the binary's symbol table against every function and
# object that libentrograd_transport.a defines (strong definitions in
# namespace entrograd; weak ones are inline code from shared headers).
#
# Usage: no_client_transport_test.sh AGGREGATOR_BINARY TRANSPORT_ARCHIVE
set -euo pipefail
binary="$1" archive="$2"
for file in "$binary" "$archive"; do
  [[ -f "$file" ]] || { echo "FAIL: $file does not exist" >&2; exit 1; }
done

strong_entrograd_symbols() {
  nm --defined-only "$1" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ && $3 ~ /9entrograd/ {print $3}' | sort -u
}

transport=$(strong_entrograd_symbols "$archive")
count=$(printf '%s\n' "$transport" | grep -c . || true)
# A transport without entrograd symbols would make this test pass vacuously.
if ((count < 20)); then
  echo "FAIL: only $count entrograd symbols found in $archive; is it the client transport?" >&2
  exit 1
fi
shared=$(comm -12 <(printf '%s\n' "$transport") <(strong_entrograd_symbols "$binary"))
if [[ -n "$shared" ]]; then
  echo "FAIL: $(basename "$binary") links the client transport; these symbols of" \
       "$(basename "$archive") are in it:" >&2
  printf '%s\n' "$shared" | c++filt | head -20 >&2
  exit 1
fi
echo "ok: none of the client transport's $count symbols is in $(basename "$binary")"
