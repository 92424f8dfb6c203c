#!/usr/bin/env python3
"""Checks every target's `import` lines against two sources of truth.

1. docs/ARCHITECTURE.md's "Imports" table: the modules each target may import (the layering).
2. Package.swift (through `swift package dump-package`): each imported module must be a
   *direct* dependency of the target, and each direct dependency must be imported. SwiftPM's own
   import check accepts anything reachable through the dependency graph, so it cannot catch a
   layer reaching past its neighbour.

System modules are allowed everywhere. Exit status 1 lists every departure, one per line.
"""
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SYSTEM = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Synchronization", "Glibc", "Darwin", "Dispatch",
          "Musl", "Testing", "PackageDescription",
          # Apple's framework, imported by the SDK under `#if canImport(Security)` (Linux: SecurityForLinux).
          "Security"}
IMPORT = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:\w+\s+)?(\w+)")


def allowed_table():
    """Rows of the table under '## Imports': | `Target` | `A`, `B` … |."""
    text = (ROOT / "docs/ARCHITECTURE.md").read_text()
    section = text.split("\n## Imports", 1)
    if len(section) < 2:
        sys.exit("docs/ARCHITECTURE.md has no '## Imports' section")
    table = {}
    for line in section[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        table[cells[0].strip("`")] = set(re.findall(r"`([\w]+)`", cells[-1]))
    return table


def declared():
    out = subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    targets = {}
    for target in json.loads(out)["targets"]:
        names = set()
        for dep in target["dependencies"]:
            kind, value = next(iter(dep.items()))
            names.add(value[0])
        path = target.get("path") or ("Tests/" if target["type"] == "test" else "Sources/") + target["name"]
        targets[target["name"]] = (ROOT / path, names)
    return targets


def main():
    table = allowed_table()
    problems = []
    for name, (path, deps) in sorted(declared().items()):
        if name not in table:
            problems.append(f"{name}: no row in docs/ARCHITECTURE.md's Imports table")
            continue
        imported = set()
        for file in sorted(path.rglob("*.swift")):
            if "Fixtures" in file.parts:
                continue
            for number, line in enumerate(file.read_text().splitlines(), 1):
                match = IMPORT.match(line)
                if not match or match.group(1) in SYSTEM:
                    continue
                module = match.group(1)
                imported.add(module)
                where = f"{file.relative_to(ROOT)}:{number}"
                if module not in table[name]:
                    problems.append(f"{where}: {name} imports {module}, which docs/ARCHITECTURE.md does not allow")
                if module not in deps:
                    problems.append(f"{where}: {name} imports {module} without declaring it in Package.swift")
        for module in sorted(deps - imported):
            problems.append(f"{name}: declares {module} in Package.swift and never imports it")
    for line in problems:
        print(line)
    print(f"imports: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
