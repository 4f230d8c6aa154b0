"""The release's SBOM: one CycloneDX document from the per-crate ones cargo-cyclonedx writes.

    python3 scripts/sbom.py OUT.json IN.json...   merge: every component once (by bom-ref),
                                                  the dependency graph joined, the build
                                                  machine's paths made relative, the time
                                                  SOURCE_DATE_EPOCH and no random serial
                                                  number, so that two builds give the same bytes
    python3 scripts/sbom.py --check SBOM.json     every crate that a shipped program is
                                                  built from is listed with its version; exit
                                                  1 if not

The shipped programs and their lock files: the command line, the service and the conformance
runners (Cargo.lock: the crates stcheck, stcheck-gate, stcheck-print, stcheck-cli,
stcheck-serve, stcheck-conformance), the Python extension (python/Cargo.lock: stcheck-python)
and the WebAssembly module (js/Cargo.lock: stcheck-js). Their crates are the normal and build
dependencies of those, for every target platform, as Cargo.lock records them; the test kit's,
the benches' and the fuzzers' crates (and dev-dependencies) are not shipped and not listed.
"""

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Each workspace (its manifest) and the crates of it that are shipped.
SHIPPED = {
    "Cargo.toml": ["stcheck", "stcheck-gate", "stcheck-print", "stcheck-cli", "stcheck-serve",
                   "stcheck-conformance"],
    "python/Cargo.toml": ["stcheck-python"],
    "js/Cargo.toml": ["stcheck-js"],
}


def relative(value):
    """The value with this checkout's absolute path taken out of every string."""
    if isinstance(value, str):
        return value.replace(f"file://{ROOT}/", "").replace(f"{ROOT}/", "").replace(str(ROOT), ".")
    if isinstance(value, list):
        return [relative(v) for v in value]
    if isinstance(value, dict):
        return {k: relative(v) for k, v in value.items()}
    return value


def merge(out, inputs):
    components, deps, tools, spec = {}, {}, None, "1.5"
    for path in inputs:
        bom = json.loads(Path(path).read_text())
        spec = bom.get("specVersion", spec)
        meta = bom.get("metadata", {})
        tools = tools or meta.get("tools")
        top = dict(meta.get("component", {}))
        top.pop("components", None)
        for c in [top] + bom.get("components", []):
            if c.get("bom-ref"):
                components.setdefault(c["bom-ref"], c)
        for d in bom.get("dependencies", []):
            deps.setdefault(d["ref"], set()).update(d.get("dependsOn", []))
    when = datetime.datetime.fromtimestamp(int(os.environ.get("SOURCE_DATE_EPOCH", "0")),
                                           datetime.timezone.utc)
    version = subprocess.run(["bash", str(ROOT / "scripts/version.sh")], capture_output=True,
                             text=True, check=True).stdout.strip()
    doc = {
        "bomFormat": "CycloneDX",
        "specVersion": spec,
        "version": 1,
        "metadata": {
            "timestamp": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tools": tools,
            "component": {"type": "application", "bom-ref": "stcheck-release",
                          "name": "stcheck", "version": version},
        },
        "components": [components[k] for k in sorted(components)],
        "dependencies": [{"ref": k, "dependsOn": sorted(v)} for k, v in sorted(deps.items())],
    }
    Path(out).write_text(json.dumps(relative(doc), indent=1, sort_keys=True) + "\n")


def shipped_crates():
    """(name, version) of every package the shipped crates are built from, and how many
    packages the lock files name in all."""
    shipped, in_locks = set(), 0
    for manifest, crates in SHIPPED.items():
        meta = json.loads(subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked", "--offline",
             "--manifest-path", str(ROOT / manifest)],
            cwd=ROOT, capture_output=True, text=True, check=True).stdout)
        pkgs = {p["id"]: p for p in meta["packages"]}
        nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
        in_locks += len(pkgs)
        todo = [i for i, p in pkgs.items() if p["name"] in crates and p["source"] is None]
        seen = set()
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            for d in nodes[i]["deps"]:
                if any(k["kind"] in (None, "build") for k in d["dep_kinds"]):
                    todo.append(d["pkg"])
        shipped |= {(pkgs[i]["name"], pkgs[i]["version"]) for i in seen}
    return shipped, in_locks


def check(path):
    bom = json.loads(Path(path).read_text())
    listed = {(c.get("name"), c.get("version")) for c in bom.get("components", [])}
    want, in_lock = shipped_crates()
    missing = sorted(want - listed)
    print(f"sbom.py: {len(listed)} components listed; {len(want)} crates "
          f"(of {in_lock} packages in the three workspaces, counted in each, test, bench and fuzz ones too) go "
          f"into the shipped programs; "
          f"{len(missing)} of those missing")
    for name, version in missing:
        print(f"  missing {name} {version}")
    return 1 if missing else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check"]:
        sys.exit(check(sys.argv[2]))
    merge(sys.argv[1], sys.argv[2:])
