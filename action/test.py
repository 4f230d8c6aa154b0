"""Runs the steps of action.yml as a GitHub Actions runner does, in a runner-like layout under
target/action-test: a workspace with weights, RUNNER_TEMP, GITHUB_ACTION_PATH (this
repository), GITHUB_PATH, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files, `${{ inputs.* }}`
replaced by the inputs, each step's `run` in bash with its `env`, and the lines a step adds to
GITHUB_PATH put in front of PATH for the steps after it.

Usage: python3 action/test.py ARTIFACTS   (a directory holding the stcheck-cli wheel and
SHA256SUMS that lists it: `sha256sum *.whl > SHA256SUMS`). Needs PyYAML (pre-commit's environment has it).
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / "target" / "action-test"


def fail(msg):
    print(f"action/test.py: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run_action(name, workspace, inputs):
    """Run every step; stop at the first that fails. Returns (failed step id or None, status,
    stdout of all steps, the step summary, the outputs file)."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    given = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    given.update(inputs)
    runner = SCRATCH / name / "runner"
    shutil.rmtree(runner, ignore_errors=True)
    temp = runner / "temp"
    temp.mkdir(parents=True)
    files = {k: runner / k.lower() for k in ("GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")}
    for f in files.values():
        f.write_text("")
    out = []
    for step in action["runs"]["steps"]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "STCHECK_"))}
        env.update({k: str(v) for k, v in files.items()})
        env.update(GITHUB_WORKSPACE=str(workspace), GITHUB_ACTION_PATH=str(ROOT),
                   RUNNER_TEMP=str(temp), CI="true", GITHUB_ACTIONS="true")
        for k, v in step.get("env", {}).items():
            env[k] = re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: given[m.group(1)], str(v))
        added = [l for l in files["GITHUB_PATH"].read_text().splitlines() if l]
        env["PATH"] = os.pathsep.join(list(reversed(added)) + [env["PATH"]])
        assert step["shell"] == "bash" and "${{" not in step["run"], step
        p = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=workspace, env=env,
                           capture_output=True, text=True, timeout=600)
        out.append(p.stdout + p.stderr)
        if p.returncode != 0:
            return (step.get("id", step["name"]), p.returncode, "".join(out),
                    files["GITHUB_STEP_SUMMARY"].read_text(), files["GITHUB_OUTPUT"].read_text())
    return (None, 0, "".join(out), files["GITHUB_STEP_SUMMARY"].read_text(),
            files["GITHUB_OUTPUT"].read_text())


def main():
    artifacts = Path(sys.argv[1]).resolve()
    wheels = sorted(artifacts.glob("stcheck_cli-*.whl"))
    if len(wheels) != 1:
        fail(f"expected one stcheck_cli wheel in {artifacts}, found {wheels}")
    version = wheels[0].name.split("-")[1]
    pin = hashlib.sha256(wheels[0].read_bytes()).hexdigest()

    workspace = SCRATCH / "workspace"
    shutil.rmtree(workspace, ignore_errors=True)
    (workspace / "models").mkdir(parents=True)
    shutil.copy(ROOT / "examples/model.safetensors", workspace / "models/good.safetensors")
    shutil.copy(ROOT / "examples/duplicate-name.safetensors", workspace / "models/bad.safetensors")

    # An invalid file: the job fails, with its annotation and a summary that names it.
    failed, code, out, summary, outputs = run_action(
        "invalid", workspace, {"artifacts": str(artifacts), "version": version, "sha256": pin})
    if (failed, code) != ("run", 1):
        fail(f"invalid file: step {failed} exited {code}, not step run with 1:\n{out}")
    annotation = ("::error file=models/bad.safetensors,line=1,title=JSON-DUPLICATE-KEY::"
                  "tensor \"decoder.weight\": duplicate tensor name (at offset 0x4b)")
    if annotation not in out.splitlines():
        fail(f"no annotation {annotation!r} in:\n{out}")
    if "## stcheck: invalid files found" not in summary or \
            "| error | models/bad.safetensors | JSON-DUPLICATE-KEY |" not in summary or \
            "`summary: 2 files: 1 valid, 1 invalid, 0 could not be checked" not in summary:
        fail(f"step summary:\n{summary}")
    if "exit-code=1" not in outputs.splitlines():
        fail(f"outputs: {outputs!r}")

    # Only the valid file, given by path with an argument: the job passes.
    failed, code, out, summary, outputs = run_action(
        "valid", workspace, {"artifacts": str(artifacts), "version": version,
                             "paths": "models/good.safetensors", "args": "--deep"})
    if (failed, code) != (None, 0) or "## stcheck: all valid" not in summary \
            or "exit-code=0" not in outputs.splitlines():
        fail(f"valid file: step {failed} exited {code}:\n{out}\n{summary}")

    # A wheel that is not the pinned one is not installed, and nothing runs.
    failed, code, out, _, _ = run_action(
        "pin", workspace, {"artifacts": str(artifacts), "version": version, "sha256": "0" * 64})
    if failed != "Install stcheck" or code != 2 or "does not have the pinned SHA-256" not in out:
        fail(f"a wrong pin: step {failed} exited {code}:\n{out}")

    print("action/test.py: the action installs the pinned wheel, annotates an invalid file, "
          "writes the step summary and fails the job; a valid file passes; a wrong pin stops it")


if __name__ == "__main__":
    main()
