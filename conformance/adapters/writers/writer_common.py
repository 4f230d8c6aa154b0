"""Shared by the Python writer adapters (see conformance/WRITER-PROTOCOL.md).

`main(write)` runs an adapter: it reads the prepared task given as the first argument, calls
`write(tensors, metadata, out_path)`, and maps the outcome to the protocol's exit codes:

  0   the writer wrote the file
  1   the writer refused the task (it raised an Exception)
  2   usage or I/O error before the writer ran (the runner counts it as a crash)
  3   the writer crashed in a way Python can catch (a Rust panic surfacing as
      pyo3's PanicException, MemoryError)
  77  the task cannot be given to the writer (`Unsupported` raised by the adapter)
"""
import json
import sys

EXIT_WROTE, EXIT_REFUSED, EXIT_USAGE, EXIT_CRASH, EXIT_UNSUPPORTED = 0, 1, 2, 3, 77


class Unsupported(Exception):
    """The writer's API has no way to express this task."""


class Tensor:
    def __init__(self, name, dtype, shape, data):
        self.name, self.dtype, self.shape, self.data = name, dtype, shape, data


def load_task(path):
    """The tensors (name, dtype, shape as ints, bytes) and the metadata (a dict in the
    task's order, values as the task gives them, or None)."""
    with open(path, "rb") as f:
        task = json.load(f)
    with open(task["data_file"], "rb") as f:
        data = f.read()
    tensors = []
    for t in task["tensors"]:
        begin, length = int(t["offset"]), int(t["length"])
        tensors.append(Tensor(t["name"], t["dtype"], [int(d) for d in t["shape"]],
                              data[begin:begin + length]))
    return tensors, task.get("metadata")


def require_shape_fits(t, itemsize, what, dtype_name):
    """Raise Unsupported when `t`'s bytes cannot be `what` (an array, a tensor) of its shape
    and dtype: an array always matches its shape, a task may not."""
    count = 1
    for d in t.shape:
        count *= d
    if count * itemsize != len(t.data):
        raise Unsupported(f"tensor {t.name!r}: {len(t.data)} bytes cannot be {what} of "
                          f"shape {t.shape} and dtype {dtype_name}")


def numpy_arrays(tensors, dtypes):
    """A dict of NumPy arrays, one per tensor; `dtypes` maps header dtype names to NumPy
    dtypes. Raises Unsupported for what an array cannot hold: a dtype without a NumPy type,
    bytes that do not match the shape (an array always matches its shape), two tensors of
    one name (a dict holds one)."""
    import numpy as np

    arrays = {}
    for t in tensors:
        if t.dtype not in dtypes:
            raise Unsupported(f"no NumPy dtype for {t.dtype}")
        dtype = np.dtype(dtypes[t.dtype])
        require_shape_fits(t, dtype.itemsize, "an array", dtype.name)
        if t.name in arrays:
            raise Unsupported(f"a dict cannot hold two tensors named {t.name!r}")
        arrays[t.name] = np.frombuffer(t.data, dtype=dtype).reshape(t.shape)
    return arrays


def main(name, write, argv, refusals=(Exception,)):
    """Run the adapter. `refusals` are the exception types that are the writer's deliberate
    refusals (exit 1); any other exception is a crash (exit 3). The default takes every
    Exception as a refusal, for libraries whose error types cover what they raise."""
    if len(argv) != 2:
        print(f"usage: {name} TASK.json OUT.safetensors", file=sys.stderr)
        return EXIT_USAGE
    try:
        tensors, metadata = load_task(argv[0])
    except (OSError, ValueError, KeyError) as e:
        print(f"{name}: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        write(tensors, metadata, argv[1])
    except Unsupported as e:
        print(f"unsupported: {e}", file=sys.stderr)
        return EXIT_UNSUPPORTED
    except MemoryError as e:
        print(f"crash: MemoryError: {e}", file=sys.stderr)
        return EXIT_CRASH
    except refusals as e:  # the writer's way to refuse
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_REFUSED
    except BaseException as e:  # pyo3's PanicException: the library panicked
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        print(f"crash: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_CRASH
    return EXIT_WROTE
