"""Instruction counts (valgrind's callgrind) of the processes a run starts, and the reading of callgrind's output.

A process runs under `valgrind --tool=callgrind` as a copy of its binary without DWARF (`objcopy --strip-debug`:
valgrind 3.19 cannot read Swift's DWARF 5 and gives up; the symbol table stays, so functions keep their names), with
sigsuspend_shim.c preloaded (see there). `zero` and `dump` drive `callgrind_control`: the counts are taken from the
moment a part is ready to the moment the run's work is done, so start-up and shutdown are not in them.
"""

import collections
import os
import re
import shutil
import subprocess
import time

from .services import BenchError

SHIM_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sigsuspend_shim.c")

_NAMED = re.compile(r"^(c?fn)=\((\d+)\)(?: (.*))?$")


class Profile:
    """One callgrind dump: the total instructions and each function's own (exclusive) instructions."""

    def __init__(self, total, by_function):
        self.total, self.by_function = total, by_function

    def top(self, count):
        return collections.Counter(self.by_function).most_common(count)


def parse(lines):
    """Reads callgrind's output format (name compression, `calls=` lines followed by the call's inclusive cost, which
    is not the caller's own) into a Profile. The total is the file's `totals:` line, or the sum of the own costs."""
    names, own = {}, collections.Counter()
    current, skip_next, total = None, False, None
    for line in lines:
        line = line.rstrip("\n")
        if skip_next:
            skip_next = False
            continue
        named = _NAMED.match(line)
        if named:
            kind, number, name = named.groups()
            if name:
                names[number] = name
            if kind == "fn":
                current = number
            continue
        if line.startswith("calls="):
            skip_next = True
            continue
        if line.startswith("totals:"):
            total = int(line.split()[1])
            continue
        if current is not None and line and (line[0].isdigit() or line[0] in "+-*"):
            fields = line.split()
            if len(fields) >= 2:
                own[current] += int(fields[1])
    by_function = collections.Counter()
    for number, cost in own.items():
        by_function[names.get(number, f"({number})")] += cost
    return Profile(total if total is not None else sum(by_function.values()), dict(by_function))


def demangle(symbols):
    """Swift symbols in their simplified demangled form (`swift demangle --simplified`); others unchanged."""
    if not symbols or shutil.which("swift") is None:
        return list(symbols)
    result = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(symbols), text=True,
                            capture_output=True)
    lines = result.stdout.splitlines()
    return lines if result.returncode == 0 and len(lines) == len(symbols) else list(symbols)


class Valgrind:
    """Runs binaries under callgrind in `work`: `command(binary, name)` gives the command line, `zero(process)` and
    `dump(process, name)` take the counts between two moments."""

    def __init__(self, work):
        for tool in ("valgrind", "callgrind_control", "objcopy", "gcc"):
            if shutil.which(tool) is None:
                raise BenchError(f"--callgrind needs {tool} (apt-get install valgrind binutils gcc)")
        self.work = work
        self.shim = os.path.join(work, "sigsuspend_shim.so")
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", self.shim, SHIM_SOURCE], check=True)
        self.dumps = {}

    def command(self, binary, name):
        """The command line that runs `binary` (a stripped copy of it) under callgrind, its output files
        `callgrind.NAME.out*` in the work directory."""
        copy = os.path.join(self.work, f"{name}-nodebug")
        subprocess.run(["objcopy", "--strip-debug", binary, copy], check=True)
        output = os.path.join(self.work, f"callgrind.{name}.out")
        return ["env", f"LD_PRELOAD={self.shim}", "valgrind", "--tool=callgrind", "--quiet",
                f"--callgrind-out-file={output}", copy]

    def _control(self, option, process):
        result = subprocess.run(["callgrind_control", option, str(process.pid)], capture_output=True, text=True,
                                timeout=120)
        if result.returncode != 0 or "OK." not in result.stdout:
            raise BenchError(f"callgrind_control {option} {process.pid}: {result.stdout.strip()} {result.stderr.strip()}")

    def zero(self, process):
        self._control("--zero", process)

    def dump(self, process, name):
        """Dumps the counts since the last zero or dump (callgrind zeroes them as it dumps) and returns them as a
        Profile."""
        self._control("--dump", process)
        number = self.dumps.get(name, 0) + 1
        self.dumps[name] = number
        path = os.path.join(self.work, f"callgrind.{name}.out.{number}")
        # callgrind writes the file when the process next runs guest code; a busy or idle process does so at once.
        for _ in range(300):
            if os.path.exists(path) and os.path.getsize(path) > 0:
                break
            time.sleep(0.1)
        else:
            raise BenchError(f"no {path} after callgrind_control --dump")
        with open(path) as dump:
            return parse(dump)
