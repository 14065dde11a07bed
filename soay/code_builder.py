"""Python code for a combination, written the way SoAy's coder is trained to write it.

The code calls only the spec's APIs, walks the solution hop by hop with readable variable names,
and leaves the answer in `final_result`. It is the target the coder model learns, so it is
plain and regular: the same shape for every combination of the same kind.
"""

from __future__ import annotations

import re

from soay.combinations import Combination
from soay.graph import Coupling
from soay.solutions import Solution
from soay.spec import ApiSpec

_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")
INDENT = "    "


def build_code(spec: ApiSpec, combination: Combination, solution: Solution, values: dict[str, str]) -> str:
    """Code answering `combination` for the placeholder `values` (head inputs and branch value).

    The head search gets exactly the head inputs `values` holds, in the API's parameter order: a
    question that gives a name and a research field searches by both, one that gives the name
    alone by the name alone."""
    return "\n".join(_Writer(spec, combination, solution, values).lines) + "\n"


def _snake(name: str) -> str:
    return _SNAKE.sub("_", name).lower()


def _result_name(api: str) -> str:
    if api.startswith("search"):
        return _snake(api[len("search"):]) + "_list"
    return _snake(api.removeprefix("get"))


def _noun(container: str) -> str:
    if container.endswith("_list"):
        return container[: -len("_list")]
    return container[:-1] if container.endswith("s") else container + "_item"


class _Writer:
    def __init__(self, spec: ApiSpec, c: Combination, s: Solution, values: dict[str, str]) -> None:
        self.spec, self.c, self.s, self.values = spec, c, s, values
        self.lines: list[str] = []
        self.used: set[str] = set()
        self._write()

    def name(self, base: str) -> str:
        """A fresh variable name: `coauthors`, then `coauthors_2` if the API repeats."""
        candidate, k = base, 2
        while candidate in self.used:
            candidate, k = f"{base}_{k}", k + 1
        self.used.add(candidate)
        return candidate

    def emit(self, line: str, depth: int = 0) -> None:
        self.lines.append(INDENT * depth + line)

    def call(self, hop: int, args: str, depth: int) -> str:
        var = self.name(_result_name(self.s.apis[hop]))
        self.emit(f"{var} = {self.s.apis[hop]}({args})", depth)
        return var

    def container(self, var: str, hop: int, coupling: Coupling) -> tuple[str, str] | None:
        """The list to pick from after `hop` (expression, noun), or None when it is one record."""
        returns = self.spec.api(self.s.apis[hop]).returns
        if returns in ("records", "values"):
            return var, _noun(var)
        if coupling.nested:
            return f"{var}[{coupling.nested!r}]", _noun(coupling.nested)
        return None

    def _write(self) -> None:
        c, s = self.c, self.s
        given = [p.name for p in self.spec.api(s.head).params if p.name in c.head_inputs and p.name in self.values]
        if not given:
            raise ValueError(f"{c.id}: no value for any head input ({', '.join(c.head_inputs)})")
        head_args = ", ".join(f"{k}={self.values[k]!r}" for k in given)
        var = self.call(0, head_args, 0)
        for i, coupling in enumerate(s.couplings):
            found = self.container(var, i, coupling)
            if i == c.loop_hop:
                self._loop(i, found)
                return
            item = self._pick(i, found, var, coupling)
            var = self.call(i + 1, f"{coupling.param}={item}[{coupling.path[-1]!r}]", 0)
        self._tail(var)

    def _pick(self, hop: int, found: tuple[str, str] | None, var: str, coupling: Coupling) -> str:
        if found is None:
            return var
        expr, noun = found
        pick = self.c.pick.get(hop, "first")
        prefix = "target" if hop == 0 else ("last" if pick == "last" else "first" if coupling.nested else "top")
        item = self.name(f"{prefix}_{noun}")
        self.emit(f"{item} = {expr}[{-1 if pick == 'last' else 0}]")
        return item

    def _tail(self, tail: str) -> None:
        a = self.c.answer
        returns = self.spec.api(self.s.tail).returns

        def read(item: str) -> str:
            return f"{item}[{a.attr!r}]" if a.attr and returns != "values" else item

        if a.op == "value":
            self.emit(f"final_result = {read(tail)}")
        elif a.op == "first":
            self.emit(f"final_result = {read(tail + '[0]')}")
        elif a.op == "list":
            self.emit(f"final_result = [{read('item')} for item in {tail}]")
        elif a.op == "count":
            self.emit(f"final_result = len({tail})")
        elif a.op in ("max", "min"):
            self.emit(f"best = {a.op}({tail}, key=lambda item: item[{a.by!r}])")
            self.emit(f"final_result = {read('best')}")
        elif a.op == "filter":
            value = a.where.value(self.values)
            self.emit(f"final_result = [{read('item')} for item in {tail} if {value!r} in item[{a.where.attr!r}]]")

    def _loop(self, hop: int, found: tuple[str, str] | None) -> None:
        a, s = self.c.answer, self.s
        expr, noun = found if found else (None, None)
        if expr is None:
            raise ValueError(f"{self.c.id}: hop {hop} returns one record, there is nothing to loop over")
        item = self.name(noun)
        tail_returns = self.spec.api(s.tail).returns

        def field(tail: str, name: str) -> str:
            return tail if tail_returns == "values" else f"{tail}[{name!r}]"

        if a.op in ("max", "min"):
            self.emit("best = None")
            self.emit("best_value = None")
        else:
            self.emit("final_result = []")
        self.emit(f"for {item} in {expr}:")
        coupling = s.couplings[hop]
        tail = self.call(hop + 1, f"{coupling.param}={item}[{coupling.path[-1]!r}]", 1)
        for i in range(hop + 1, len(s.couplings)):
            c = s.couplings[i]
            found = self.container(tail, i, c)
            picked = tail
            if found:
                picked = self.name(f"top_{found[1]}")
                self.emit(f"{picked} = {found[0]}[0]", 1)
            tail = self.call(i + 1, f"{c.param}={picked}[{c.path[-1]!r}]", 1)
        reported = f"{item}[{a.attr!r}]" if a.source == "item" else (field(tail, a.attr) if a.attr else tail)
        if a.op in ("max", "min"):
            cmp = ">" if a.op == "max" else "<"
            self.emit(f"if best_value is None or {field(tail, a.by)} {cmp} best_value:", 1)
            self.emit(f"best_value = {field(tail, a.by)}", 2)
            self.emit(f"best = {item if a.source == 'item' else tail}", 2)
            self.emit(f"final_result = best[{a.attr!r}]")
        elif a.op == "filter":
            value = a.where.value(self.values)
            self.emit(f"if {value!r} in {field(tail, a.where.attr)}:", 1)
            self.emit(f"final_result.append({reported})", 2)
        elif a.op == "flatten":
            inner = self.name(_noun(tail) if tail.endswith("s") else "entry")
            self.emit(f"for {inner} in {tail}:", 1)
            self.emit(f"if {inner}[{a.attr!r}] not in final_result:", 2)
            self.emit(f"final_result.append({inner}[{a.attr!r}])", 3)
        elif a.op == "list":
            self.emit(f"final_result.append({reported})", 1)
