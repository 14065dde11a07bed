"""Static allow-list check of generated code, before anything runs.

The sandbox's process limits contain damage; this check keeps generated code inside the small
Python subset that API-composition code needs, so the usual escapes never get to run: imports,
class definitions, dunder walks such as ``().__class__.__bases__[0].__subclasses__()``,
``str.format`` attribute walks (``'{0.__class__}'.format(x)``), and calls to anything that is not
an API, a safe builtin or a function the code defines itself. It is an allow-list (node types,
attribute names, callee names) so that Python syntax added later is rejected until reviewed.

It also gives precise, line-numbered messages, which is why the caller runs it before sending
code to the sandbox server (the server's child runs it again, as defence in depth).
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from soay.sandbox.builtins import ALLOWED_BUILTIN_NAMES
from soay.sandbox.protocol import ErrorType

RESULT_NAME = "final_result"
# Generated snippets are a few dozen lines; a bound keeps parsing cheap and predictable.
MAX_CODE_CHARS = 100_000

SAFE_ATTRIBUTES: frozenset[str] = frozenset(
    {
        # str
        "lower", "upper", "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "join",
        "startswith", "endswith", "replace", "find", "rfind", "title", "capitalize", "casefold",
        "swapcase", "isdigit", "isalpha", "isalnum", "isnumeric", "isdecimal", "isspace",
        "islower", "isupper", "istitle", "zfill", "center", "ljust", "rjust", "partition",
        "rpartition", "removeprefix", "removesuffix",
        # list / tuple
        "append", "extend", "insert", "remove", "sort", "reverse", "index", "count",
        # dict
        "get", "items", "keys", "values", "update", "setdefault", "popitem", "fromkeys",
        # set
        "add", "discard", "union", "intersection", "difference", "symmetric_difference",
        "issubset", "issuperset", "isdisjoint", "intersection_update", "difference_update",
        "symmetric_difference_update",
        # shared by several containers
        "pop", "copy", "clear",
        # numbers and exceptions
        "is_integer", "args",
    }
)  # fmt: skip

_ALLOWED_NODES: tuple[type[ast.AST], ...] = (
    # statements
    ast.Module, ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.For,
    ast.While, ast.If, ast.Try, ast.ExceptHandler, ast.Raise, ast.Assert, ast.Return, ast.Break,
    ast.Continue, ast.Pass, ast.FunctionDef, ast.arguments, ast.arg, ast.keyword,
    # expressions
    ast.BoolOp, ast.NamedExpr, ast.BinOp, ast.UnaryOp, ast.Lambda, ast.IfExp, ast.Dict, ast.Set,
    ast.List, ast.Tuple, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
    ast.comprehension, ast.Compare, ast.Call, ast.FormattedValue, ast.JoinedStr, ast.Constant,
    ast.Attribute, ast.Subscript, ast.Starred, ast.Name, ast.Slice,
    # operators and contexts
    ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop,
)  # fmt: skip

_FORBIDDEN_NAMES: dict[type[ast.AST], str] = {
    ast.Import: "import statements",
    ast.ImportFrom: "import statements",
    ast.Global: "global statements",
    ast.Nonlocal: "nonlocal statements",
    ast.ClassDef: "class definitions",
    ast.With: "with statements",
    ast.AsyncWith: "async with statements",
    ast.AsyncFor: "async for loops",
    ast.AsyncFunctionDef: "async functions",
    ast.Await: "await expressions",
    ast.Yield: "yield expressions",
    ast.YieldFrom: "yield expressions",
    ast.TryStar: "except* blocks",
    ast.Match: "match statements",
}


class PolicyViolation(Exception):
    """Generated code uses something the sandbox does not allow.

    `error_type` is the ExecutionResult category this maps to: "policy" for forbidden or
    unparsable code, "no_result" when the code never assigns ``final_result``.
    """

    def __init__(
        self, message: str, *, lineno: int | None = None, error_type: ErrorType = "policy"
    ) -> None:
        super().__init__(message)
        self.message = message
        self.lineno = lineno
        self.error_type: ErrorType = error_type


def _private(name: str) -> bool:
    """Whether a name may reach interpreter internals; the bare throwaway name `_` may not."""
    return name.startswith("_") and name != "_"


def _violation(node: ast.AST, what: str) -> PolicyViolation:
    lineno = getattr(node, "lineno", None)
    where = f"line {lineno}: " if lineno is not None else ""
    return PolicyViolation(f"{where}{what}", lineno=lineno)


def _position(node: ast.AST) -> tuple[int, int, int, int]:
    return (
        getattr(node, "lineno", 0),
        getattr(node, "col_offset", 0),
        getattr(node, "end_lineno", 0) or 0,
        getattr(node, "end_col_offset", 0) or 0,
    )


def _check_node(node: ast.AST, defined: set[str], calls: list[ast.Call]) -> None:
    """Reject `node` if it is not allowed; record names it defines and calls to check later."""
    if not isinstance(node, _ALLOWED_NODES):
        what = _FORBIDDEN_NAMES.get(type(node), f"{type(node).__name__} nodes")
        raise _violation(node, f"{what} are not allowed")
    if isinstance(node, ast.Name):
        if _private(node.id):
            raise _violation(node, f"name '{node.id}' is not allowed (names starting with '_')")
        if not isinstance(node.ctx, ast.Load):
            defined.add(node.id)
    elif isinstance(node, ast.Attribute):
        if node.attr.startswith("_"):
            raise _violation(node, f"attribute '.{node.attr}' is not allowed (starts with '_')")
        if node.attr not in SAFE_ATTRIBUTES:
            raise _violation(
                node,
                f"attribute '.{node.attr}' is not allowed "
                "(only common data methods such as .get, .append, .split, .join are)",
            )
    elif isinstance(node, ast.keyword):
        if node.arg is not None and node.arg.startswith("_"):
            raise _violation(node, f"keyword argument '{node.arg}' is not allowed")
    elif isinstance(node, ast.arg):
        if _private(node.arg):
            raise _violation(node, f"parameter name '{node.arg}' is not allowed")
        defined.add(node.arg)
    elif isinstance(node, ast.FunctionDef):
        if _private(node.name):
            raise _violation(node, f"function name '{node.name}' is not allowed")
        if node.decorator_list:
            raise _violation(node, f"decorators are not allowed (on function '{node.name}')")
        defined.add(node.name)
    elif isinstance(node, ast.ExceptHandler):
        if node.name is not None:
            if _private(node.name):
                raise _violation(node, f"exception name '{node.name}' is not allowed")
            defined.add(node.name)
    elif isinstance(node, ast.comprehension):
        if node.is_async:
            raise _violation(node.iter, "async comprehensions are not allowed")
    elif isinstance(node, ast.Call):
        calls.append(node)


def _sets_result_at_module_level(tree: ast.Module) -> bool:
    """Whether some assignment outside function bodies binds ``final_result``."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.Lambda):
            continue
        if (
            isinstance(node, ast.Name)
            and node.id == RESULT_NAME
            and isinstance(node.ctx, ast.Store)
        ):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def check_code(code: str, api_names: Collection[str]) -> ast.Module:
    """Parse `code` and return its AST if it stays inside the allowed subset.

    Raises PolicyViolation, naming the construct and the line, on syntax errors, forbidden
    statements or expressions, names/attributes/keywords starting with '_', attributes outside
    SAFE_ATTRIBUTES, calls to names that are neither in `api_names`, safe builtins nor defined in
    the code, and on code that never assigns ``final_result`` at module level.
    """
    if len(code) > MAX_CODE_CHARS:
        raise PolicyViolation(f"code is too long ({len(code)} > {MAX_CODE_CHARS} characters)")
    try:
        tree = ast.parse(code, filename="<snippet>", mode="exec")
    except SyntaxError as exc:
        lineno = exc.lineno
        where = f"line {lineno}: " if lineno is not None else ""
        raise PolicyViolation(f"{where}syntax error: {exc.msg}", lineno=lineno) from None
    except ValueError as exc:  # e.g. NUL bytes in the source
        raise PolicyViolation(f"code cannot be parsed: {exc}") from None
    except (RecursionError, MemoryError):
        raise PolicyViolation("code is nested too deeply to parse") from None

    # ast.walk is iterative, so deeply nested code cannot overflow the stack; checking in source
    # order (innermost first at equal starts) reports the violation a reader meets first.
    nodes = sorted(ast.walk(tree), key=_position)
    defined: set[str] = set()
    calls: list[ast.Call] = []
    for node in nodes:
        _check_node(node, defined, calls)

    callable_names = defined | ALLOWED_BUILTIN_NAMES | set(api_names)
    for call in calls:
        if isinstance(call.func, ast.Name) and call.func.id not in callable_names:
            raise _violation(
                call,
                f"call to '{call.func.id}' is not allowed "
                "(not an API, a safe builtin or a function defined in the code)",
            )

    if not _sets_result_at_module_level(tree):
        raise PolicyViolation(
            f"code never sets {RESULT_NAME} (assign the answer to {RESULT_NAME} at module level)",
            error_type="no_result",
        )
    return tree
