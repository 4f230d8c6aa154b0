#!/usr/bin/env python3
import hashlib, json, sys
from safetensors import SafetensorError, deserialize

def answer(path):                                   # -> (status, reply members)
    try:
        loaded = deserialize(open(path, "rb").read())
    except SafetensorError as e:                    # the library refused the file
        return "reject", {"message": str(e)}
    except BaseException as e:                      # anything else is not a verdict
        return "crash", {"message": repr(e)}
    return "accept", {"tensors": [
        {"name": name, "dtype": t["dtype"], "shape": [str(d) for d in t["shape"]],
         "sha256": hashlib.sha256(bytes(t["data"])).hexdigest()} for name, t in loaded]}

def main(args):
    if args == ["--persistent"]:                    # one JSON request per line
        for line in sys.stdin:
            request = json.loads(line)
            status, members = answer(request["path"])
            print(json.dumps({"id": request["id"], "status": status, **members}), flush=True)
        return 0
    status, members = answer(args[0])               # one file: exit 0, 1, or 3 (crash)
    print(json.dumps(members))
    return {"accept": 0, "reject": 1}.get(status, 3)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
