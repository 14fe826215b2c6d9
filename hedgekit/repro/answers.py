"""A student's answers as data: how `hedgekit.repro.grade` carries values from the grading kernel (student code) to
the check process (the instructor's code) without the check process ever running student code.

Values cross as pickles written by `dumps` and read back in the check process by `loads_answer`, an unpickler that
rebuilds only plain data: None, bools, numbers, strings, bytes, lists, tuples, dicts, sets, ranges, slices and the
`collections` containers; numpy arrays, scalars, dtypes and random generators, and torch tensors, dtypes, sizes,
devices and generators travel as raw bytes with their dtype and shape (never an array of objects). Any other class
in the stream is refused, so a crafted pickle cannot make the check process call anything. A module crosses as its name (the
check process imports its own copy); a function, or any other callable that is not a class, crosses as a `Proxy`:
calling it in the check process asks the kernel to run the function (`call`) on the arguments sent as data, and the
result comes back as data, with the arguments' in-place changes (a tensor filled, a generator advanced) copied
back onto the caller's objects (`sync`).

This module imports only the standard library at its top (numpy and torch are found in ``sys.modules`` or imported
when a value needs them): `hedgekit.repro.grade` runs its source inside the grading kernel, where `export` and
`call` write the answers and a function's results to files the grader passes on unread.
"""
from __future__ import annotations

import builtins
import collections
import importlib
import io
import pickle
import re
import sys
import types

__all__ = ["Unsendable", "Proxy", "dumps", "loads_answer", "loads_kernel", "export", "call", "sync", "rebuild_error"]

PROTOCOL = 4
_PLAIN = {type(None), bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset, range,
          slice, type(Ellipsis), type(NotImplemented), collections.OrderedDict, collections.deque,
          collections.Counter, collections.defaultdict}
_SAFE_GLOBALS = {("builtins", t.__name__) for t in (bool, int, float, complex, str, bytes, bytearray, list, tuple,
                                                    dict, set, frozenset, range, slice)}
_SAFE_GLOBALS |= {("builtins", "Ellipsis"), ("builtins", "NotImplemented"), ("collections", "OrderedDict"),
                  ("collections", "deque"), ("collections", "Counter"), ("collections", "defaultdict")}
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
MESSAGE_CHARS = 4000  # an exception's text is cut here


class Unsendable(TypeError):
    """A value that cannot cross as data: an instance of a class the check process does not rebuild."""


class Proxy:
    """A student's function as the check process sees it: calling it runs the function in the grading kernel
    (through ``caller(key, name, args, kwargs)``), never here."""

    def __init__(self, key: int, name: str, caller):
        self.key, self.__name__, self.__qualname__, self._caller = key, name, name, caller

    def __call__(self, *args, **kwargs):
        return self._caller(self.key, self.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"<function {self.__name__} (the student's, run in the grading kernel)>"


def _torch():
    return sys.modules.get("torch")


def _numpy():
    return sys.modules.get("numpy")


def _type_name(obj) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _tensor_bytes(t) -> bytes:
    c = t.detach().cpu().resolve_conj().resolve_neg().contiguous().reshape(-1)
    return c.view(_torch().uint8).numpy().tobytes()


class _Encoder(pickle.Pickler):
    """A pickler that writes tensors, arrays, generators, modules and functions as persistent ids (`dumps`)."""

    def __init__(self, file, functions: dict | None):
        super().__init__(file, protocol=PROTOCOL)
        self.functions = functions  # the kernel's registry of functions sent as proxies; None in the check process

    def persistent_id(self, obj):  # noqa: C901 - one branch per kind of value
        t = type(obj)
        if t in _PLAIN:
            return None
        torch, np = _torch(), _numpy()
        if torch is not None:
            if isinstance(obj, torch.Tensor):
                if obj.layout != torch.strided or obj.is_quantized or obj.device.type == "meta":
                    raise Unsendable(f"a {obj.layout} / quantized / meta tensor")
                return ("tensor", str(obj.dtype).split(".")[-1], tuple(obj.shape), _tensor_bytes(obj),
                        bool(obj.requires_grad), str(obj.device))
            if isinstance(obj, torch.Generator):
                return ("torch_generator", str(obj.device), _tensor_bytes(obj.get_state()))
            if isinstance(obj, torch.dtype):
                return ("torch_dtype", str(obj).split(".")[-1])
            if isinstance(obj, torch.Size):
                return ("torch_size", tuple(int(n) for n in obj))
            if isinstance(obj, torch.device):
                return ("torch_device", str(obj))
        if np is not None:
            if isinstance(obj, np.ndarray):
                if obj.dtype.hasobject:
                    raise Unsendable("a numpy array of Python objects (dtype=object)")
                return ("ndarray", obj.dtype.str, tuple(obj.shape), np.ascontiguousarray(obj).tobytes())
            if isinstance(obj, np.generic) and not obj.dtype.hasobject:
                return ("npscalar", obj.dtype.str, obj.tobytes())
            if isinstance(obj, np.dtype) and not obj.hasobject:
                return ("npdtype", obj.str)
            if isinstance(obj, np.random.Generator):
                return ("np_generator", obj.bit_generator.state)
        if isinstance(obj, types.ModuleType):
            return ("module", obj.__name__)
        if isinstance(obj, Proxy):
            return ("function", obj.key, obj.__name__)
        if self.functions is None:  # the check process sends its own values as pickle writes them
            return None
        if callable(obj) and not isinstance(obj, type):
            key = next((k for k, f in self.functions.items() if f is obj), len(self.functions))
            self.functions[key] = obj
            return ("function", key, str(getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "function")))
        if isinstance(obj, type):
            if obj.__module__ == "builtins" and ("builtins", obj.__name__) in _SAFE_GLOBALS:
                return None
            raise Unsendable(f"the class {obj.__module__}.{obj.__qualname__}")
        raise Unsendable(f"a {_type_name(obj)} object")


def dumps(value, functions: dict | None = None) -> bytes:
    """``value`` as bytes `loads_answer` (or `loads_kernel`) reads; ``functions``: the kernel's registry, where each
    function met is kept under the key its proxy carries (None in the check process: a `Proxy` is written as its
    key, other values as pickle writes them). `Unsendable` names what cannot cross."""
    buffer = io.BytesIO()
    _Encoder(buffer, functions).dump(value)
    return buffer.getvalue()


def _shape(value) -> tuple:
    if not (isinstance(value, tuple) and all(isinstance(n, int) and n >= 0 for n in value)):
        raise pickle.UnpicklingError(f"a shape must be a tuple of sizes; got {value!r:.80}")
    return value


def _numel(shape: tuple) -> int:
    n = 1
    for size in shape:
        n *= size
    return n


def _tensor(dtype_name, shape, data, requires_grad=False, device="cpu"):
    import torch

    dtype = getattr(torch, str(dtype_name), None)
    if not isinstance(dtype, torch.dtype) or not isinstance(data, bytes):
        raise pickle.UnpicklingError(f"not a tensor: dtype {dtype_name!r:.40}")
    shape = _shape(shape)
    itemsize = torch.empty((), dtype=dtype).element_size()
    if _numel(shape) * itemsize != len(data):
        raise pickle.UnpicklingError(f"a tensor of shape {shape} and dtype {dtype_name} cannot hold {len(data)} bytes")
    if not data:
        t = torch.empty(shape, dtype=dtype)
    else:
        t = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype).reshape(shape)
    if isinstance(device, str) and device.startswith("cuda") and torch.cuda.is_available():
        try:
            t = t.to(device)
        except (RuntimeError, ValueError):
            pass  # a device this process lacks: the values stay on the CPU
    if requires_grad is True and (t.is_floating_point() or t.is_complex()):
        t.requires_grad_(True)
    return t


def _ndarray(dtype_str, shape, data):
    import numpy as np

    dtype = np.dtype(str(dtype_str))
    if dtype.hasobject or not isinstance(data, bytes):
        raise pickle.UnpicklingError(f"not an array of data: dtype {dtype_str!r:.40}")
    shape = _shape(shape)
    if _numel(shape) * dtype.itemsize != len(data):
        raise pickle.UnpicklingError(f"an array of shape {shape} and dtype {dtype_str} cannot hold {len(data)} bytes")
    return np.frombuffer(bytearray(data), dtype=dtype).reshape(shape)


def _rebuild(pid, function):  # noqa: C901 - one branch per kind of value
    """The value of a persistent id written by `_Encoder`; ``function(key, name)`` gives a function's stand-in."""
    if not (isinstance(pid, tuple) and pid and isinstance(pid[0], str)):
        raise pickle.UnpicklingError(f"malformed value: {pid!r:.80}")
    kind, args = pid[0], pid[1:]
    try:
        if kind == "tensor":
            return _tensor(*args)
        if kind == "torch_generator":
            import torch

            device, state = args
            g = torch.Generator(device=str(device) if str(device).startswith("cuda") and torch.cuda.is_available()
                                else "cpu")
            g.set_state(_tensor("uint8", (len(state),), state))
            return g
        if kind == "torch_dtype":
            import torch

            value = getattr(torch, str(args[0]), None)
            if isinstance(value, torch.dtype):
                return value
        elif kind == "torch_size":
            import torch

            return torch.Size(_shape(args[0]))
        elif kind == "torch_device":
            import torch

            return torch.device(str(args[0]))
        elif kind == "ndarray":
            return _ndarray(*args)
        elif kind == "npscalar":
            dtype_str, data = args
            return _ndarray(dtype_str, (1,), data)[0]
        elif kind == "npdtype":
            import numpy as np

            value = np.dtype(str(args[0]))
            if not value.hasobject:
                return value
        elif kind == "np_generator":
            import numpy as np

            (state,) = args
            name = state.get("bit_generator") if isinstance(state, dict) else None
            if name in _BIT_GENERATORS:
                bit_generator = getattr(np.random, name)()
                bit_generator.state = state
                return np.random.Generator(bit_generator)
        elif kind == "module":
            (name,) = args
            if isinstance(name, str) and _DOTTED.fullmatch(name) and name != "__main__":
                return importlib.import_module(name)
        elif kind == "function":
            key, name = args
            if isinstance(key, int) and isinstance(name, str):
                return function(key, name)
    except pickle.UnpicklingError:
        raise
    except ImportError as exc:
        raise pickle.UnpicklingError(f"module {args[0]!r} cannot be imported here ({exc})") from None
    except Exception as exc:  # a wrong number of fields, a bad dtype string, a state the generator refuses
        raise pickle.UnpicklingError(f"malformed {kind}: {type(exc).__name__}: {exc}") from None
    raise pickle.UnpicklingError(f"malformed {kind}: {args!r:.80}")


class _AnswerReader(pickle.Unpickler):
    """The check process's unpickler: plain data and `_Encoder`'s persistent ids, nothing else."""

    def __init__(self, file, caller):
        super().__init__(file)
        self.caller = caller

    def find_class(self, module, name):
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a {module}.{name} object, which is not data")

    def persistent_load(self, pid):
        return _rebuild(pid, lambda key, name: Proxy(key, name, self.caller))


def loads_answer(data: bytes, caller=None):
    """The value ``data`` holds, read in the check process: only data is rebuilt (module docstring), and a function
    becomes a `Proxy` calling ``caller(key, name, args, kwargs)``. `pickle.UnpicklingError` for anything else."""
    if not isinstance(data, bytes):
        raise pickle.UnpicklingError(f"expected bytes; got {_type_name(data)}")
    return _AnswerReader(io.BytesIO(data), caller).load()


class _KernelReader(pickle.Unpickler):
    def __init__(self, file, functions: dict):
        super().__init__(file)
        self.functions = functions

    def persistent_load(self, pid):
        return _rebuild(pid, lambda key, name: self.functions[key])


def loads_kernel(data: bytes, functions: dict):
    """The value ``data`` holds (written by the check process), read in the kernel: a function's key becomes the
    student's function it stands for."""
    return _KernelReader(io.BytesIO(data), functions).load()


def rebuild_error(name: str, bases: list, message: str) -> BaseException:
    """An exception for the check process to raise where the student's function raised ``name(message)``: the
    built-in class of that name, else a class of that name deriving from the built-in ``bases`` it had (so
    ``except ValueError`` still catches it)."""
    name = name if isinstance(name, str) and name.isidentifier() else "Exception"
    found = getattr(builtins, name, None)
    message = str(message)[:MESSAGE_CHARS]
    if isinstance(found, type) and issubclass(found, Exception):
        return found(message) if message else found()
    parents = tuple(getattr(builtins, b) for b in bases if isinstance(b, str) and
                    isinstance(getattr(builtins, b, None), type) and issubclass(getattr(builtins, b), Exception))
    for candidate in (parents, parents[:1], (Exception,)):
        try:
            cls = type(name, candidate or (Exception,), {"__module__": "student"})
            break
        except TypeError:  # bases whose layouts conflict
            continue
    return cls(message) if message else cls()


def _error_fields(exc: BaseException) -> tuple[str, list, str]:
    bases = [c.__name__ for c in type(exc).__mro__ if getattr(builtins, c.__name__, None) is c]
    return type(exc).__name__, bases, str(exc)[:MESSAGE_CHARS]


# ------------------------------------------------------------------------------ the kernel's side
_FUNCTIONS: dict = {}  # key -> the student's function, for the proxies the check process holds
_SYNCED = ("Tensor", "Generator", "ndarray", "list", "dict", "set", "bytearray")


def export(namespace: dict, names: list, path: str) -> None:
    """Write the values of ``names`` found in ``namespace`` to ``path`` (the kernel's side): a dict with
    ``values`` (name -> bytes of `dumps`) and ``errors`` (name -> why it cannot cross)."""
    values, errors = {}, {}
    for name in names:
        if name not in namespace:
            continue
        try:
            values[name] = dumps(namespace[name], _FUNCTIONS)
        except Unsendable as exc:
            errors[name] = f"it holds {exc}"
        except Exception as exc:  # a value pickle itself refuses
            errors[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
    with open(path, "wb") as f:
        f.write(pickle.dumps({"values": values, "errors": errors}, protocol=PROTOCOL))


def call(key: int, request: str, response: str) -> None:
    """Run the student's function ``key`` on the arguments in the file ``request`` (the kernel's side) and write the
    outcome to ``response``: ``("returned", result, args, kwargs)`` as bytes of `dumps` (an argument of a kind
    that can change in place, else None), ``("raised", name, bases, text)``, or ``("unsendable", why)``."""
    with open(request, "rb") as f:
        args, kwargs = loads_kernel(f.read(), _FUNCTIONS)

    def back(value):
        if type(value).__name__ not in _SYNCED:
            return None
        try:
            return dumps(value, _FUNCTIONS)
        except Exception:
            return None

    try:
        result = _FUNCTIONS[key](*args, **kwargs)
    except BaseException as exc:  # the student's code: any exception, exit() included, is the outcome
        outcome = ("raised", *_error_fields(exc))
    else:
        try:
            outcome = ("returned", dumps(result, _FUNCTIONS), [back(a) for a in args],
                       {k: back(v) for k, v in kwargs.items()})
        except Unsendable as exc:
            outcome = ("unsendable", f"it returned {exc}")
        except Exception as exc:
            outcome = ("unsendable", f"its result cannot be written ({type(exc).__name__}: {str(exc)[:200]})")
    with open(response, "wb") as f:
        f.write(pickle.dumps(outcome, protocol=PROTOCOL))


# ------------------------------------------------------------------------------ the check process's side
def sync(original, returned) -> None:
    """Copy onto ``original`` (an argument the check passed) the state ``returned`` (the same argument after the
    student's function ran) shows: tensor and array contents, generator states, list / dict / set items."""
    torch, np = _torch(), _numpy()
    if torch is not None and isinstance(original, torch.Tensor) and isinstance(returned, torch.Tensor):
        if original.shape == returned.shape and original.dtype == returned.dtype:
            returned = returned.to(original.device)
            if not torch.equal(original, returned):
                with torch.no_grad():
                    original.copy_(returned)
    elif torch is not None and isinstance(original, torch.Generator) and isinstance(returned, torch.Generator):
        original.set_state(returned.get_state())
    elif np is not None and isinstance(original, np.ndarray) and isinstance(returned, np.ndarray):
        if original.shape == returned.shape and original.flags.writeable and not np.array_equal(original, returned):
            np.copyto(original, returned, casting="unsafe")
    elif np is not None and isinstance(original, np.random.Generator) and isinstance(returned, np.random.Generator):
        original.bit_generator.state = returned.bit_generator.state
    elif isinstance(original, list) and isinstance(returned, list):
        if len(original) != len(returned):
            original[:] = returned
        for i, (a, b) in enumerate(zip(original, returned)):
            _sync_item(original, i, a, b)
    elif isinstance(original, dict) and isinstance(returned, dict):
        for k in [k for k in original if k not in returned]:
            del original[k]
        for k, b in returned.items():
            if k in original:
                _sync_item(original, k, original[k], b)
            else:
                original[k] = b
    elif isinstance(original, (set, bytearray)) and type(original) is type(returned) and original != returned:
        if isinstance(original, set):
            original.clear()
            original.update(returned)
        else:
            original[:] = returned


def _sync_item(container, key, a, b) -> None:
    if type(a).__name__ in _SYNCED and type(a) is type(b):
        sync(a, b)
        return
    try:
        same = type(a) is type(b) and bool(a == b)
    except Exception:  # a comparison without one answer (tuples of tensors)
        same = False
    if not same:
        container[key] = b
