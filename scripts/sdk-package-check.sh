#!/usr/bin/env bash
# StorekeeperKit added the way an iOS team adds it: a throwaway app package that depends on this
# repository by URL (`file://` of a clone of the committed HEAD), imports StorekeeperKit, builds
# and runs. Fails unless the build compiled StorekeeperKit and none of the server's modules
# (Hummingbird, PostgresNIO, GRDB, …); prints the modules it compiled and the packages SwiftPM
# fetched. Usage: scripts/sdk-package-check.sh (from anywhere in the repository).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/storekeeper-sdk-app.XXXXXX")
trap 'rm -rf "$work"' EXIT
git clone -q "$root" "$work/storekeeper"
revision=$(git -C "$work/storekeeper" rev-parse HEAD)
mkdir -p "$work/app/Sources/App"
cat > "$work/app/Package.swift" <<EOF
// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "ThrowawayApp",
    platforms: [.iOS(.v16), .macOS(.v15)],
    dependencies: [.package(url: "file://$work/storekeeper", revision: "$revision")],
    targets: [.executableTarget(name: "App", dependencies: [.product(name: "StorekeeperKit", package: "storekeeper")])]
)
EOF
cat > "$work/app/Sources/App/main.swift" <<'EOF'
import StorekeeperKit

print("StorekeeperKit \(Storekeeper.version)")
EOF
cd "$work/app"
started=$(date +%s)
# No debug information: nothing here is debugged, and it is a third of the compile time.
if ! swift build -Xswiftc -gnone -Xcc -g0 > "$work/build.log" 2>&1; then
    tail -40 "$work/build.log"
    echo "sdk-package-check: the app did not build" >&2
    exit 1
fi
# A target was compiled when its build directory holds object files (SwiftPM makes the
# directories of every target in the graph, compiled or not).
compiled=$(for dir in .build/debug/*.build; do
    if [[ -n $(find "$dir" -name '*.o' -print -quit) ]]; then basename "$dir" .build; fi
done | sort | tr '\n' ' ')
echo "sdk-package-check: built in $(( $(date +%s) - started )) s; compiled: $compiled"
echo "sdk-package-check: fetched: $(ls .build/checkouts | sort | tr '\n' ' ')"
for server in Hummingbird PostgresNIO GRDB StorekeeperServer NIOCore; do
    if [[ " $compiled " == *" $server "* ]]; then
        echo "sdk-package-check: the app compiled $server, a server module" >&2
        exit 1
    fi
done
[[ " $compiled " == *" StorekeeperKit "* ]] || { echo "sdk-package-check: StorekeeperKit was not compiled" >&2; exit 1; }
said=$(.build/debug/App)
expected=$(sed -n 's/.*public static let version = "\([^"]*\)".*/\1/p' "$root/StorekeeperKit/Sources/StorekeeperKit/Version.swift" | head -1)
[[ "$said" == "StorekeeperKit $expected" ]] || { echo "sdk-package-check: the app said '$said', not StorekeeperKit $expected" >&2; exit 1; }
echo "sdk-package-check: the app ran: $said"
