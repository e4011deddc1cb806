import Foundation

/// Runs a worker whose wall clock is off, as on a host whose clock is wrong: libfaketime (Debian's `faketime`,
/// multi-threaded variant) shifts `CLOCK_REALTIME` only (`--exclude-monotonic`: the monotonic and boot clocks stay
/// true), and a small preload library of the test's own hands `timerfd_settime` and `timerfd_gettime` to the
/// kernel unchanged.
///
/// Why that library: libfaketime 0.9.10 moves every absolute timerfd deadline by its offset, those of the monotonic
/// timers it does not fake included, and the worker's timers (Dispatch's, under Swift's `Task.sleep`) are such
/// deadlines. With the clock 10 minutes behind, every sleep lasted 10 minutes more: a worker's first broker retry,
/// 87 ms away, had not come 8 s later. With the clock 10 minutes ahead, every timer was armed 10 minutes in the past
/// and fired at once: 43,970 `timerfd_settime` calls in 3 s. A host whose clock is off has neither problem.
enum FakeClock {
    /// The preload library's source.
    static let source = """
        #define _GNU_SOURCE
        #include <sys/syscall.h>
        #include <sys/timerfd.h>
        #include <unistd.h>

        int timerfd_settime(int fd, int flags, const struct itimerspec *value, struct itimerspec *old) {
            return (int)syscall(SYS_timerfd_settime, fd, flags, value, old);
        }

        int timerfd_gettime(int fd, struct itimerspec *value) {
            return (int)syscall(SYS_timerfd_gettime, fd, value);
        }
        """

    /// Builds the library into `directory` (with the toolchain's `clang`, or `cc`) and returns the wrapper that
    /// starts a worker with its wall clock `offset` away (libfaketime's format: `+10m`, `-10m`).
    static func wrapper(_ offset: String, building directory: URL) async throws -> [String] {
        let source = directory.appendingPathComponent("timerfd-passthrough.c")
        let library = directory.appendingPathComponent("timerfd-passthrough.so")
        try Self.source.write(to: source, atomically: true, encoding: .utf8)
        try await FleetHarness.shell(
            "sh",
            [
                "-c",
                "compiler=$(command -v clang || command -v cc) && \"$compiler\" -shared -fPIC -O2 -o \"$0\" \"$1\"",
                library.path, source.path,
            ])
        guard FileManager.default.fileExists(atPath: library.path) else {
            throw FleetError("could not build \(library.path)")
        }
        // The library comes first, so its functions win over libfaketime's (which `faketime` appends).
        return ["LD_PRELOAD=\(library.path)", "faketime", "-m", "--exclude-monotonic", "-f", offset]
    }
}
