"""CPU time from /proc: the whole machine's (busy time of every core) and each part's (processes by pid or name)."""

import os
import threading
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def machine_busy_seconds(proc_stat_text):
    """Busy CPU seconds of all cores since boot, from /proc/stat's `cpu` line: everything but idle and iowait."""
    for line in proc_stat_text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [int(value) for value in fields[1:]]
            # user nice system idle iowait irq softirq steal (guest time is already in user)
            idle = values[3] + (values[4] if len(values) > 4 else 0)
            total = sum(values[:8])
            return (total - idle) / CLOCK_TICKS
    raise ValueError("no cpu line in /proc/stat")


def process_seconds(pid_stat_text):
    """utime + stime of a process and its waited-for children (`/proc/PID/stat`), in seconds."""
    fields = pid_stat_text.rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3 of stat): utime is field 14, so index 11 here; stime, cutime, cstime follow.
    return sum(int(fields[index]) for index in (11, 12, 13, 14)) / CLOCK_TICKS


def _read(path):
    with open(path) as file:
        return file.read()


def snapshot(parts):
    """{part: cumulative CPU seconds}: `machine` always; each part in `parts` is (name, pids or a process name)."""
    result = {"machine": machine_busy_seconds(_read("/proc/stat"))}
    by_name = {}
    for name, who in parts:
        if isinstance(who, str):
            by_name.setdefault(who, []).append(name)
            continue
        total = 0.0
        for pid in who:
            try:
                total += process_seconds(_read(f"/proc/{pid}/stat"))
            except OSError:
                pass
        result[name] = total
    if by_name:
        for name_list in by_name.values():
            for name in name_list:
                result.setdefault(name, 0.0)
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                comm = _read(f"/proc/{pid}/comm").strip()
                if comm in by_name:
                    seconds = process_seconds(_read(f"/proc/{pid}/stat"))
                    for name in by_name[comm]:
                        result[name] += seconds
            except OSError:
                continue
    return result


class Sampler:
    """Takes a snapshot of `parts()` every `interval` seconds in a thread, keeping (monotonic time, snapshot); a run
    then picks the snapshots nearest to the instants it cares about (the drain's start and its last push)."""

    def __init__(self, parts, interval=0.5):
        self.parts = parts
        self.interval = interval
        self.samples = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), snapshot(self.parts())))
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.samples.append((time.monotonic(), snapshot(self.parts())))

    def nearest(self, instant):
        return min(self.samples, key=lambda sample: abs(sample[0] - instant))
