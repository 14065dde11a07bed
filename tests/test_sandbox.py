"""The code sandbox, end to end: a real server subprocess, real forks, real limits."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from soay.sandbox import ExecutionResult, Limits, PolicyViolation, Sandbox, check_code

# The server imports the factory through the caller's sys.path, which must hold this directory.
TESTS_DIR = str(Path(__file__).resolve().parent)
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)

FACTORY = "sandbox_fixture_env:make_env"
APIS = {"searchPerson", "getPersonPubs"}
LIMITS = Limits(cpu_seconds=1.0, wall_seconds=1.5, memory_mb=256, max_output_bytes=1_000_000)

NORMAL = """
people = searchPerson(name="alan")
pubs = []
for person in people:
    for pub in getPersonPubs(person_id=person["id"]):
        pubs.append((person["name"], pub["title"], pub["year"]))
final_result = sorted(pubs, key=lambda row: row[2])
"""
NORMAL_RESULT = [
    ["Alan Turing", "On Computable Numbers", 1936],
    ["Alan Turing", "Computing Machinery and Intelligence", 1950],
    ["Alan Kay", "A Personal Computer for Children of All Ages", 1972],
]
NORMAL_CALLS = [
    {"api": "searchPerson", "args": {"name": "alan"}},
    {"api": "getPersonPubs", "args": {"person_id": "p2"}},
    {"api": "getPersonPubs", "args": {"person_id": "p3"}},
]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _wait_dead(pid: int, timeout: float = 5.0) -> None:
    """Until `pid` has exited (a zombie counts: its parent has not reaped it yet)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} is still running")


def _assert_normal(sandbox: Sandbox) -> None:
    result = sandbox.run(NORMAL)
    assert result.ok, result.error
    assert result.result == NORMAL_RESULT
    assert result.calls == NORMAL_CALLS


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(FACTORY, limits=LIMITS) as box:
        yield box


# --- normal code --------------------------------------------------------------------------


def test_normal_code_returns_result_and_call_trace(sandbox: Sandbox) -> None:
    result = sandbox.run(NORMAL)
    assert isinstance(result, ExecutionResult)
    assert result.ok and result.error is None and result.error_type is None
    assert result.result == NORMAL_RESULT
    assert result.calls == NORMAL_CALLS
    assert result.duration_s > 0
    assert result.to_dict()["result"] == NORMAL_RESULT


def test_print_output_is_captured(sandbox: Sandbox) -> None:
    result = sandbox.run("print('found', 2, sep='=')\nprint('x', end='')\nfinal_result = 1")
    assert result.ok
    assert result.stdout == "found=2\nx"


def test_result_is_made_json_compatible(sandbox: Sandbox) -> None:
    result = sandbox.run("final_result = {'t': (1, 2), 's': {3, 1, 2}, 1: None, 'f': 1.5}")
    assert result.ok
    assert result.result == {"t": [1, 2], "s": [1, 2, 3], "1": None, "f": 1.5}


def test_positional_api_arguments_are_traced_by_parameter_name(sandbox: Sandbox) -> None:
    result = sandbox.run("final_result = len(getPersonPubs('p2'))")
    assert result.ok and result.result == 2
    assert result.calls == [{"api": "getPersonPubs", "args": {"person_id": "p2"}}]


def test_snippets_do_not_share_state(sandbox: Sandbox) -> None:
    assert sandbox.run("leftover = 41\nfinal_result = leftover + 1").result == 42
    result = sandbox.run("final_result = leftover")
    assert result.error_type == "runtime"
    assert "NameError" in (result.error or "")


def test_env_is_built_in_the_server_only() -> None:
    assert "sandbox_fixture_env" not in sys.modules


# --- hostile code ---------------------------------------------------------------------------

# (code, accepted error types, text the error message must contain)
HOSTILE: list[tuple[str, set[str], str]] = [
    # limits
    ("while True:\n    pass\nfinal_result = 1", {"timeout"}, "CPU limit"),
    ("final_result = sum(range(10**12))", {"timeout"}, "limit"),  # stuck in C: killed
    ("x = [0] * 10**10\nfinal_result = 1", {"memory"}, "memory limit"),
    ("s = 'a' * 10**10\nfinal_result = 1", {"memory"}, "memory limit"),
    ("x = []\nwhile True:\n    x.append([0] * 100000)\nfinal_result = 1", {"memory"}, "memory"),
    ("def f(n):\n    return [n] * n + f(n + 1)\nfinal_result = f(1)", {"memory", "recursion"}, ""),
    ("x = 7 ** 7 ** 7 ** 2\nfinal_result = 1", {"memory", "timeout"}, ""),
    ("def f():\n    return f()\nf()\nfinal_result = 1", {"recursion"}, "RecursionError"),
    ("final_result = 'a' * 10_000_000", {"output_too_large"}, "too large"),
    ("a = []\na.append(a)\nfinal_result = a", {"runtime"}, "not JSON-serialisable"),
    ("final_result = searchPerson", {"runtime"}, "not JSON-serialisable"),
    ("x = 1", {"no_result"}, "never sets final_result"),
    ("if False:\n    final_result = 1", {"no_result"}, "never set final_result"),
    ("def f():\n    final_result = 1\nf()", {"no_result"}, "never sets final_result"),
    # bad API use
    ("getPersonPubs(person_id='nobody')\nfinal_result = 1", {"runtime"}, "ApiCallError"),
    ("searchPerson(nme='alan')\nfinal_result = 1", {"runtime"}, "TypeError"),
    ("while True:\n    searchPerson(name='a')\nfinal_result = 1", {"runtime"}, "too many API calls"),
    # escapes the policy must stop
    ("final_result = (", {"policy"}, "syntax error"),
    ("import os\nfinal_result = 1", {"policy"}, "import"),
    ("from os import system\nfinal_result = 1", {"policy"}, "import"),
    ("import sys\nsys.exit()\nfinal_result = 1", {"policy"}, "import"),
    ("open('/etc/passwd')\nfinal_result = 1", {"policy"}, "'open'"),
    ("final_result = __import__('os')", {"policy"}, "__import__"),
    ("final_result = ().__class__.__bases__[0].__subclasses__()", {"policy"}, "__class__"),
    ("final_result = getattr(1, '__class__')", {"policy"}, "'getattr'"),
    ("final_result = eval('1')", {"policy"}, "'eval'"),
    ("exec('x=1')\nfinal_result = 1", {"policy"}, "'exec'"),
    ("final_result = compile('1', 's', 'eval')", {"policy"}, "'compile'"),
    ("final_result = '{0.__class__}'.format(1)", {"policy"}, ".format"),
    ("final_result = '{a}'.format_map({'a': 1})", {"policy"}, ".format_map"),
    ("final_result = f'{().__class__}'", {"policy"}, "__class__"),
    ("final_result = (lambda: 0).__globals__", {"policy"}, "__globals__"),
    ("final_result = (x for x in []).gi_frame", {"policy"}, "gi_frame"),
    ("final_result = str.mro()", {"policy"}, ".mro"),
    ("final_result = searchPerson.__wrapped__", {"policy"}, "__wrapped__"),
    ("final_result = type(1)", {"policy"}, "'type'"),
    ("final_result = globals()", {"policy"}, "'globals'"),
    ("final_result = vars()", {"policy"}, "'vars'"),
    ("final_result = __builtins__", {"policy"}, "__builtins__"),
    ("class A:\n    pass\nfinal_result = 1", {"policy"}, "class"),
    ("with open('x') as f:\n    pass\nfinal_result = 1", {"policy"}, "with"),
    ("global x\nfinal_result = 1", {"policy"}, "global"),
    ("def g():\n    yield 1\nfinal_result = 1", {"policy"}, "yield"),
    ("async def g():\n    pass\nfinal_result = 1", {"policy"}, "async"),
    ("@len\ndef g():\n    pass\nfinal_result = 1", {"policy"}, "decorator"),
    ("final_result = print(file=1, _x=2)", {"policy"}, "'_x'"),
    ("os._exit(0)\nfinal_result = 1", {"policy"}, "_exit"),
    ("exit()\nfinal_result = 1", {"policy"}, "'exit'"),
    ("quit()\nfinal_result = 1", {"policy"}, "'quit'"),
    ("breakpoint()\nfinal_result = 1", {"policy"}, "'breakpoint'"),
    # exits must not take the server down
    ("raise SystemExit\nfinal_result = 1", {"runtime"}, "NameError"),
    ("raise KeyboardInterrupt\nfinal_result = 1", {"runtime"}, "NameError"),
    ("raise ValueError('boom')\nfinal_result = 1", {"runtime"}, "ValueError: boom (line 1)"),
]


@pytest.mark.parametrize(("code", "expected", "message"), HOSTILE)
def test_hostile_code_is_contained(
    sandbox: Sandbox, code: str, expected: set[str], message: str
) -> None:
    server_pid = sandbox.pid
    started = time.monotonic()
    result = sandbox.run(code)
    elapsed = time.monotonic() - started

    assert not result.ok
    assert result.result is None
    assert result.error_type in expected, result.error
    assert message in (result.error or "")
    assert elapsed < LIMITS.wall_seconds + 1.0
    # The server survived and the same sandbox still works.
    assert sandbox.pid == server_pid and not _gone(server_pid)
    _assert_normal(sandbox)


def test_failed_snippet_keeps_calls_made_before_the_failure(sandbox: Sandbox) -> None:
    result = sandbox.run(
        "people = searchPerson(name='ada')\n"
        "pubs = getPersonPubs(person_id='missing')\n"
        "final_result = pubs"
    )
    assert result.error_type == "runtime"
    assert result.error == "ApiCallError: getPersonPubs: unknown person_id 'missing' (line 2)"
    assert result.calls == [
        {"api": "searchPerson", "args": {"name": "ada"}},
        {"api": "getPersonPubs", "args": {"person_id": "missing"}},
    ]


def test_api_errors_can_be_caught_by_the_code(sandbox: Sandbox) -> None:
    result = sandbox.run(
        "try:\n    getPersonPubs(person_id='missing')\n    final_result = 'no'\n"
        "except Exception as e:\n    final_result = 'caught'"
    )
    assert result.ok and result.result == "caught"


def test_print_flood_is_bounded_and_does_not_hang(sandbox: Sandbox) -> None:
    started = time.monotonic()
    result = sandbox.run("for i in range(10**7):\n    print(i)\nfinal_result = 1")
    assert time.monotonic() - started < LIMITS.wall_seconds + 1.0
    assert result.error_type in (None, "timeout")
    assert len(result.stdout.encode()) <= LIMITS.max_output_bytes + 100
    assert result.stdout.startswith("0\n1\n2\n")
    assert "[stdout truncated" in result.stdout


def test_cpu_timeout_returns_within_wall_limit(sandbox: Sandbox) -> None:
    started = time.monotonic()
    result = sandbox.run("n = 0\nwhile True:\n    n += 1\nfinal_result = n")
    elapsed = time.monotonic() - started
    assert result.error_type == "timeout"
    assert LIMITS.cpu_seconds * 0.9 <= elapsed < LIMITS.wall_seconds + 1.0


def test_cpu_interruption_cannot_be_swallowed(sandbox: Sandbox) -> None:
    code = (
        "while True:\n    try:\n        while True:\n            pass\n    except:\n        pass\n"
        "final_result = 1"
    )
    started = time.monotonic()
    result = sandbox.run(code)
    assert result.error_type == "timeout"
    assert time.monotonic() - started < LIMITS.wall_seconds + 1.0


def test_wall_clock_limit_applies_to_slow_apis() -> None:
    limits = Limits(cpu_seconds=1.0, wall_seconds=1.0)
    with Sandbox(FACTORY, {"delay_s": 30.0}, limits=limits) as slow:
        started = time.monotonic()
        result = slow.run("final_result = searchPerson(name='ada')")
        assert time.monotonic() - started < limits.wall_seconds + 1.0
        assert result.error_type == "timeout"
        assert "wall-clock" in (result.error or "")
        assert result.calls == [{"api": "searchPerson", "args": {"name": "ada"}}]

        # A bare except swallows the graceful interruption; the server's SIGKILL still ends it.
        started = time.monotonic()
        result = slow.run(
            "while True:\n    try:\n        searchPerson(name='ada')\n    except:\n        pass\n"
            "final_result = 1"
        )
        assert time.monotonic() - started < limits.wall_seconds + 1.0
        assert result.error_type == "timeout"


def test_concurrent_runs_are_serialised(sandbox: Sandbox) -> None:
    results: list[ExecutionResult] = []

    def work() -> None:
        for i in range(10):
            results.append(sandbox.run(f"final_result = {i} * 2"))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 40
    assert all(r.ok for r in results)
    assert sorted(r.result for r in results) == sorted([i * 2 for i in range(10)] * 4)


def test_sandbox_refuses_use_from_a_forked_process(sandbox: Sandbox) -> None:
    pid = os.fork()
    if pid == 0:  # the forked copy must not talk over the owner's pipes
        try:
            sandbox.run("final_result = 1")
        except RuntimeError:
            os._exit(0)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    _assert_normal(sandbox)


def test_throughput_of_trivial_snippets(sandbox: Sandbox) -> None:
    started = time.perf_counter()
    for i in range(200):
        result = sandbox.run(f"final_result = {i} + 1")
        assert result.ok and result.result == i + 1
    elapsed = time.perf_counter() - started
    print(f"sandbox overhead: {elapsed / 200 * 1000:.2f} ms per trivial snippet")
    assert elapsed < 10.0


# --- server lifecycle ------------------------------------------------------------------------


def test_close_terminates_the_server() -> None:
    box = Sandbox(FACTORY, limits=LIMITS)
    pid = box.pid
    assert not _gone(pid)
    assert box.run("final_result = 1").ok
    box.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    box.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        box.run("final_result = 1")


def test_server_killed_during_a_run_is_restarted() -> None:
    with Sandbox(FACTORY, {"delay_s": 1.0}, limits=LIMITS) as box:
        old_pid = box.pid
        killer = threading.Timer(0.3, os.kill, (old_pid, signal.SIGKILL))
        killer.start()
        result = box.run("final_result = searchPerson(name='ada')")
        killer.join()
        assert result.error_type == "crash"
        assert "restarted" in (result.error or "")
        assert box.pid != old_pid
        assert _gone(old_pid)
        again = box.run("final_result = 2")
        assert again.ok and again.result == 2


def test_batch_goes_on_after_the_server_is_killed_mid_batch() -> None:
    with Sandbox(FACTORY, {"delay_s": 1.0}, limits=LIMITS) as box:
        killer = threading.Timer(0.3, os.kill, (box.pid, signal.SIGKILL))
        killer.start()
        results = box.run_batch(["final_result = searchPerson(name='ada')", "final_result = 2", "final_result = 3"])
        killer.join()
        assert results[0].error_type == "crash"
        assert [r.result for r in results[1:]] == [2, 3]  # the rest ran on the new server


def test_server_found_dead_is_replaced_before_running() -> None:
    with Sandbox(FACTORY, limits=LIMITS) as box:
        old_pid = box.pid
        os.kill(old_pid, signal.SIGKILL)
        _wait_dead(old_pid)
        result = box.run(NORMAL)
        assert result.ok and result.result == NORMAL_RESULT
        assert box.pid != old_pid


def test_bad_env_factory_fails_loudly() -> None:
    with pytest.raises(RuntimeError, match="failed to start"):
        Sandbox("sandbox_fixture_env:no_such_factory")
    with pytest.raises(RuntimeError, match="package.module:callable"):
        Sandbox("no_colon_here")


# --- the policy on its own -------------------------------------------------------------------


def test_policy_accepts_typical_generated_code() -> None:
    code = (
        "def best(rows, key):\n"
        "    return max(rows, key=lambda r: r.get(key, 0)) if rows else None\n"
        "people = searchPerson(name='alan')\n"
        "counts = {p['id']: len(getPersonPubs(person_id=p['id'])) for p in people}\n"
        "for _ in range(2):\n"
        "    pass\n"
        "try:\n"
        "    top = best([{'n': v} for v in counts.values()], 'n')\n"
        "except (KeyError, ValueError) as err:\n"
        "    top = None\n"
        "assert isinstance(counts, dict)\n"
        "label = f\"{len(counts):>3} people, top={top!r}\"\n"
        "final_result = {'label': label.strip(), 'ids': sorted(counts)}\n"
    )
    tree = check_code(code, APIS)
    assert tree.body


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        ("x = 1\nimport os\nfinal_result = 1", "line 2: import statements are not allowed"),
        ("final_result = 1\nfinal_result.__class__", "line 2: attribute '.__class__'"),
        ("final_result = 'a'.format()", "line 1: attribute '.format' is not allowed"),
        ("final_result = foo()", "line 1: call to 'foo' is not allowed"),
        ("final_result = 1 +", "line 1: syntax error"),
    ],
)
def test_policy_messages_name_construct_and_line(code: str, fragment: str) -> None:
    with pytest.raises(PolicyViolation) as caught:
        check_code(code, APIS)
    assert fragment in str(caught.value)
    assert caught.value.error_type == "policy"


def test_policy_reports_missing_result_as_no_result() -> None:
    with pytest.raises(PolicyViolation, match="never sets final_result") as caught:
        check_code("x = searchPerson(name='a')", APIS)
    assert caught.value.error_type == "no_result"


def test_policy_rejects_unknown_calls_but_not_defined_functions() -> None:
    check_code("def helper(f):\n    return f(1)\nfinal_result = helper(abs)", APIS)
    with pytest.raises(PolicyViolation, match="'searchPaper'"):
        check_code("final_result = searchPaper(title='x')", APIS)


# --- batches ---------------------------------------------------------------------------------


def test_batch_isolates_snippets_and_survives_hostile_ones(sandbox: Sandbox) -> None:
    """One child per batch, yet each snippet has its own namespace and limits: a memory bomb, a
    swallowed timeout and a policy violation fail alone while the rest of the batch succeeds."""
    codes = [
        NORMAL,
        "leaked = 1\nfinal_result = 1",
        "final_result = leaked",  # a name from the previous snippet must not be visible
        "x = [0] * 10**10\nfinal_result = 1",
        "while True:\n    try:\n        pass\n    except:\n        pass\nfinal_result = 1",
        "import os\nfinal_result = 1",
        "final_result = len(getPersonPubs(person_id='p2'))",
    ]
    results = sandbox.run_batch(codes)
    assert [r.error_type for r in results] == [None, None, "runtime", "memory", "timeout", "policy", None]
    assert results[0].result == NORMAL_RESULT and results[0].calls == NORMAL_CALLS
    assert "leaked" in results[2].error
    assert results[6].ok and results[6].result == 2
    assert sandbox.run("final_result = 'still here'").result == "still here"


def test_batch_is_much_cheaper_per_snippet_than_single_runs(sandbox: Sandbox) -> None:
    codes = [f"final_result = {i}" for i in range(300)]
    start = time.perf_counter()
    results = sandbox.run_batch(codes)
    batch_s = time.perf_counter() - start
    assert [r.result for r in results] == list(range(300))
    start = time.perf_counter()
    for code in codes[:30]:
        sandbox.run(code)
    single_s = (time.perf_counter() - start) * 10
    assert batch_s < single_s / 2, (batch_s, single_s)
