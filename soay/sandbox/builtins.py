"""The only builtins generated code sees.

Generated code runs with this dict as ``__builtins__``, so anything that reaches the
interpreter, the file system or other objects' internals simply does not exist for it: no
getattr/setattr/delattr, eval/exec/compile, open/input, __import__, type/vars/dir/globals/
locals, help, breakpoint, memoryview, object. Without ``__import__`` even an import statement
that slipped past the policy fails at run time.

``print`` is deliberately absent from SAFE_BUILTINS: each execution supplies its own bounded
capture (see ``with_print``), so output can neither reach the server's pipes nor grow without
limit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

SAFE_BUILTINS: Mapping[str, Any] = MappingProxyType(
    {
        # data types and constructors
        "list": list,
        "dict": dict,
        "set": set,
        "tuple": tuple,
        "str": str,
        "int": int,
        "float": float,
        "bool": bool,
        # pure functions over data
        "len": len,
        "range": range,
        "min": min,
        "max": max,
        "sorted": sorted,
        "sum": sum,
        "enumerate": enumerate,
        "zip": zip,
        "abs": abs,
        "round": round,
        "divmod": divmod,
        "any": any,
        "all": all,
        "reversed": reversed,
        "isinstance": isinstance,
        "map": map,
        "filter": filter,
        "iter": iter,
        "next": next,
        "repr": repr,
        # exceptions generated code may raise or catch
        "Exception": Exception,
        "KeyError": KeyError,
        "IndexError": IndexError,
        "ValueError": ValueError,
        "TypeError": TypeError,
        "ZeroDivisionError": ZeroDivisionError,
        "AttributeError": AttributeError,
        "NameError": NameError,
        "RuntimeError": RuntimeError,
        "StopIteration": StopIteration,
    }
)

ALLOWED_BUILTIN_NAMES: frozenset[str] = frozenset(SAFE_BUILTINS) | {"print"}


def with_print(print_fn: Callable[..., None]) -> dict[str, Any]:
    """A fresh builtins dict for one execution, with `print_fn` as its print."""
    return {**SAFE_BUILTINS, "print": print_fn}
