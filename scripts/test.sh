#!/usr/bin/env bash
# The project's test command: formatting, vet, and every test (unit and
# end-to-end, which build and drive the real binary) under the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null || { echo "test.sh: Go is not installed (see README)" >&2; exit 1; }
command -v bash >/dev/null || { echo "test.sh: bash is required" >&2; exit 1; }

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2; echo "$unformatted" >&2; exit 1
fi
echo "== go vet"
go vet ./...
echo "== go test -race (the end-to-end tests build the daemon with -race too)"
ACPTEST_RACE=1 go test -race -timeout 8m "$@" ./...
