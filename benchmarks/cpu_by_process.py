"""CPU seconds each process on the machine spent while a command ran.

Why: on a small machine a service's throughput is set by the CPU every process takes per request,
including processes that only wait (vLLM's workers spin on their queue between steps). Per-process
CPU during a benchmark run shows where that time goes (benchmarks/REPORT-serve.md). Other
processes that end during the run are not counted.

    .venv/bin/python benchmarks/cpu_by_process.py -- .venv/bin/python benchmarks/serve_bench.py \
        --url http://127.0.0.1:8400 --users 4 --duration 30 --overload 0 --out /tmp/serve4.md
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds() -> dict[int, tuple[str, float]]:
    """(command line, user + system CPU seconds) of every process readable now."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            name = (proc / "cmdline").read_text().replace("\0", " ").strip() or stat.split("(", 1)[1].split(")", 1)[0]
        except OSError:  # the process ended while being read
            continue
        fields = stat.rsplit(")", 1)[1].split()
        found[int(proc.name)] = (name, (int(fields[11]) + int(fields[12])) / TICKS)  # utime, stime
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=18, help="How many processes to list.")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="The command to run (after --).")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    before, started = cpu_seconds(), time.perf_counter()
    code = subprocess.run(command).returncode
    after, wall = cpu_seconds(), time.perf_counter() - started
    spent = [(cpu - before.get(pid, (name, 0.0))[1], pid, name) for pid, (name, cpu) in after.items()]
    # the command has exited, so /proc no longer has it: its own CPU (and its children's) from rusage
    own = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = sorted([*spent, (own.ru_utime + own.ru_stime, 0, f"(the command) {' '.join(command)}")], reverse=True)
    print(f"wall {wall:.1f} s, CPU {sum(s for s, _, _ in spent):.1f} s on {os.cpu_count()} CPUs")
    for seconds, pid, name in spent[: args.top]:
        print(f"{seconds:7.1f} {pid:>7} {name[:90]}")
    raise SystemExit(code)


if __name__ == "__main__":
    main()
