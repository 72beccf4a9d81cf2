#!/usr/bin/env bash
# Import-direction check (run by `make lint` and `make test`); the rules,
# which docs/architecture.md explains:
#
#   domain, configs  import nothing of ours
#   store, streams   import only domain, configs and their own subpackages;
#                    store/storetest may also import store and store/redistest
#   services/...     never import gateway, workers or cmd
#   workers          never import gateway or services: a stage reaches a
#                    service through an interface it declares, wired in cmd
#   gateway/...      never imports workers
#   any package      never imports its parent (or any ancestor), except a
#                    test-support package named *test, which exists to serve
#                    its parent's tests (as net/http/httptest does)
#   outside cmd/     nothing imports cmd/...
#
# Only non-test imports are checked. Exits 1 listing every violation.
# IMPORTCHECK_INPUT names a file of "package import..." lines (as
# `go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...` prints them)
# to check instead of this module; .ci/importcheck's test uses it.
set -euo pipefail
cd "$(dirname "$0")/.."

mod=github.com/nexo-im/nexo
violations=0

violate() {
	printf 'import-direction: %s imports %s (%s)\n' "$1" "$2" "$3" >&2
	violations=$((violations + 1))
}

# under PKG ROOT: PKG is ROOT or inside it.
under() { [[ $1 == "$2" || $1 == "$2"/* ]]; }

check() {
	local pkg imports rel imp dep
	while read -r pkg imports; do
		rel=${pkg#"$mod"}
		rel=${rel#/}
		for imp in $imports; do
			[[ $imp == "$mod" || $imp == "$mod"/* ]] || continue
			dep=${imp#"$mod"}
			dep=${dep#/}
			if [[ -n $rel && ($dep == "" || $rel == "$dep"/*) && ${rel##*/} != *test ]]; then
				violate "$rel" "$dep" "no package imports its parent"
			fi
			if under "$dep" cmd && ! under "$rel" cmd; then
				violate "$rel" "$dep" "cmd wires everything; nothing imports it"
			fi
			if under "$rel" domain || under "$rel" configs; then
				violate "$rel" "$dep" "domain and configs import nothing of ours"
			elif [[ $rel == store/storetest ]]; then
				under "$dep" domain || under "$dep" configs || [[ $dep == store || $dep == store/redistest ]] ||
					violate "$rel" "$dep" "store/storetest may import only domain, configs, store and store/redistest"
			elif under "$rel" store; then
				under "$dep" domain || under "$dep" configs || under "$dep" store ||
					violate "$rel" "$dep" "store imports only domain and configs"
			elif under "$rel" streams; then
				under "$dep" domain || under "$dep" configs || under "$dep" streams ||
					violate "$rel" "$dep" "streams imports only domain and configs"
			elif under "$rel" services; then
				! under "$dep" gateway || violate "$rel" "$dep" "services never import the gateway"
				! under "$dep" workers || violate "$rel" "$dep" "services never import workers"
			elif under "$rel" workers; then
				! under "$dep" gateway || violate "$rel" "$dep" "workers never import the gateway"
				! under "$dep" services || violate "$rel" "$dep" "workers reach services only through interfaces they declare"
			elif under "$rel" gateway; then
				! under "$dep" workers || violate "$rel" "$dep" "gateway never imports workers"
			fi
		done
	done
}

if [[ -n ${IMPORTCHECK_INPUT:-} ]]; then
	check <"$IMPORTCHECK_INPUT"
else
	[[ $(go list -m) == "$mod" ]] || { echo "importcheck: module is $(go list -m), want $mod" >&2; exit 1; }
	check < <(go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...)
fi

if ((violations > 0)); then
	printf 'import-direction: %d violation(s)\n' "$violations" >&2
	exit 1
fi
echo "import-direction: ok"
