"""`N committed cases (K of them sharded sets) [and M large cases]`, for CONFORMANCE.md."""
import json
import sys

m = json.load(open(sys.argv[1]))
index = sum(1 for c in m["cases"] if c.get("kind") == "index")
text = f"{len(m['cases'])} committed cases ({index} of them sharded sets)"
if sys.argv[2] == "1":
    text += f" and {len(m['large'])} large cases"
print(text)
