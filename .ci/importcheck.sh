#!/usr/bin/env bash
# Import-direction check (run by `make lint` and `make test`).
#
# Rules (DEVELOPERS.md, shared STYLE.md): imports point inward.
#   domain, configs      import nothing of ours
#   store, streams       import only domain and configs (and their own subpackages);
#                        store/storetest may also import store and store/redistest
#   workers              never imports gateway
#   gateway/...          never imports workers
#   nothing outside cmd/ imports cmd/... (cmd/app is the wiring that the
#                        binaries and their end-to-end tests share)
# Only non-test imports are checked. Exits 1 listing every violation.
set -euo pipefail
cd "$(dirname "$0")/.."

mod=$(go list -m)
violations=0

violate() {
	printf 'import-direction: %s imports %s (%s)\n' "$1" "$2" "$3" >&2
	violations=$((violations + 1))
}

# under PKG ROOT: PKG is ROOT or inside it.
under() { [[ $1 == "$2" || $1 == "$2"/* ]]; }

while read -r pkg imports; do
	rel=${pkg#"$mod"}
	rel=${rel#/}
	for imp in $imports; do
		[[ $imp == "$mod" || $imp == "$mod"/* ]] || continue
		dep=${imp#"$mod"}
		dep=${dep#/}
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
		elif under "$rel" workers; then
			! under "$dep" gateway || violate "$rel" "$dep" "workers never imports gateway"
		elif under "$rel" gateway; then
			! under "$dep" workers || violate "$rel" "$dep" "gateway never imports workers"
		fi
	done
done < <(go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...)

if ((violations > 0)); then
	printf 'import-direction: %d violation(s)\n' "$violations" >&2
	exit 1
fi
echo "import-direction: ok"
