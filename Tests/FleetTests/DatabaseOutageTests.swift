import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The database cannot write for a minute or more, longer than the watchdog's limit, under steady publishing: a
/// PostgreSQL failover onto a read-only standby, PostgreSQL stopped (every connection refused) for 90 s, and
/// SQLite's disk full for 90 s. The workers hold what they have unacked, take nothing more, keep their broker
/// sessions (no channel churn, so nothing counts toward the queues' delivery limit), report unready while it lasts,
/// and catch up after: every event takes effect once, nothing is dead-lettered, no worker exits.
@Suite("Database outages", .serialized, .timeLimit(.minutes(8)))
struct DatabaseOutageTests {
    /// What the fault injection saw during the outage.
    private actor Observed {
        var channelsOpened = 0
        var unready: Set<Int> = []
        var readyAfter: [Int: Duration] = [:]
        /// How long after the database was back the queues held no more than a second's publishing.
        var caughtUp: Duration?
        func caughtUp(after duration: Duration) { caughtUp = duration }
        func record(channels: Int, unready: Set<Int>, readyAfter: [Int: Duration]) {
            (channelsOpened, self.unready, self.readyAfter) = (channels, unready, readyAfter)
        }
    }

    @Test func postgresReadOnlyForSixtySeconds() async throws {
        let observed = Observed()
        // About 2,500 events at 40 a second: publishing goes on through the whole outage.
        let report = try await FleetHarness.run(seed: 21, rate: 40) { run in
            try await Task.sleep(for: .seconds(6))
            // A failover onto a standby, as the workers see it: every session ends, and every new one is read-only.
            try await Self.postgres("ALTER DATABASE \(run.database) SET default_transaction_read_only = on")
            try await Self.postgres(Self.endSessions(of: run.database))
            try await Self.outage(of: .seconds(60), run: run, observed: observed) {
                try await Self.postgres("ALTER DATABASE \(run.database) SET default_transaction_read_only = off")
                try await Self.postgres(Self.endSessions(of: run.database))
            }
            return 1
        }
        FleetTests.expectClean(report, allowDuplicates: false, "PostgreSQL read-only 60 s")
        let channels = await observed.channelsOpened
        let (unready, readyAfter) = await (observed.unready, observed.readyAfter)
        print(
            "fleet[PostgreSQL read-only 60 s]: channels opened during the outage \(channels), ready again after \(readyAfter)"
        )
        #expect(channels < 10 * 3, "channels and connections opened by 3 workers during the outage")
        #expect(unready == [0, 1, 2], "every worker reported unready while the database could not write")
        #expect(readyAfter.count == 3, "every worker ready again after the outage")
    }

    /// PostgreSQL stopped for 90 seconds (every connection refused) under steady publishing: longer than the
    /// watchdog's limit, so that a worker that counted the refused connections as a wedge would exit.
    @Test func postgresStoppedForNinetySeconds() async throws {
        let observed = Observed()
        // 2,500 events at 25 a second: publishing goes on through the whole outage (about 96 s from the stop).
        let report = try await FleetHarness.run(seed: 23, rate: 25) { run in
            try await Task.sleep(for: .seconds(6))
            try await FleetHarness.shell("scripts/services", ["pg-stop"])
            let clock = ContinuousClock()
            var back = clock.now
            try await Self.outage(of: .seconds(90), run: run, observed: observed) {
                try await FleetHarness.shell("scripts/services", ["pg-start"])
                back = clock.now
            }
            // Caught up: what queued during the outage is taken (a second's publishing at most is left queued).
            while clock.now - back < .seconds(120),
                try await FleetHarness.messagesInQueues(namespace: run.namespace) > 30
            {
                try await Task.sleep(for: .milliseconds(250))
            }
            await observed.caughtUp(after: clock.now - back)
            return 1
        }
        FleetTests.expectClean(report, allowDuplicates: false, "PostgreSQL stopped 90 s")
        let channels = await observed.channelsOpened
        let (unready, readyAfter, caughtUp) = await (observed.unready, observed.readyAfter, observed.caughtUp)
        print(
            "fleet[PostgreSQL stopped 90 s]: channels opened during the outage \(channels), ready again after "
                + "\(readyAfter), caught up \(caughtUp.map { "\($0)" } ?? "never") after PostgreSQL started again"
        )
        #expect(channels < 10 * 3, "channels and connections opened by 3 workers during the outage")
        #expect(unready == [0, 1, 2], "every worker reported unready while the database was down")
        #expect(readyAfter.count == 3, "every worker ready again after the outage")
        #expect(caughtUp.map { $0 < .seconds(120) } ?? false, "the fleet took what queued during the outage")
    }

    /// Needs root, to mount a small tmpfs (CI runs as root).
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func sqliteOnADiskThatFillsUpAndIsEnlargedNinetySecondsLater() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "badgepipe-full-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try await FleetHarness.shell("mount", ["-t", "tmpfs", "-o", "size=3m", "tmpfs", directory.path])
        defer {
            _ = try? Process.run(URL(fileURLWithPath: "/usr/bin/umount"), arguments: ["-l", directory.path])
        }
        // The database starts with a little over a megabyte free: the run fills it within seconds.
        try await FleetHarness.shell(
            "dd", ["if=/dev/zero", "of=\(directory.path)/filler", "bs=1k", "count=1900", "status=none"])
        let observed = Observed()
        let report = try await FleetHarness.run(
            seed: 22, workers: 1, rate: 60, sqlitePath: directory.appendingPathComponent("badgepipe.sqlite").path
        ) { run in
            try await Self.outage(of: .seconds(90), run: run, observed: observed) {
                try await FleetHarness.shell("mount", ["-o", "remount,size=256m", directory.path])
            }
            return 1
        }
        FleetTests.expectClean(report, allowDuplicates: false, "SQLite disk full")
        let channels = await observed.channelsOpened
        let (unready, readyAfter) = await (observed.unready, observed.readyAfter)
        print("fleet[SQLite disk full]: channels opened during the outage \(channels), ready again after \(readyAfter)")
        #expect(channels < 10)
        #expect(unready == [0], "the worker reported unready while the disk was full")
        #expect(readyAfter.count == 1)
    }

    /// Watches the workers' readiness and the broker's channel churn for `length`, then runs `end` and waits (up to
    /// 60 s) for every worker to be ready again.
    private static func outage(
        of length: Duration, run: FleetRun, observed: Observed, end: () async throws -> Void
    ) async throws {
        let clock = ContinuousClock()
        // The management API's counters lag by its collection interval (5 s): the workers' start must be in them.
        try await Task.sleep(for: .seconds(6))
        let channelsBefore = try await channelsCreated()
        var unready: Set<Int> = []
        let until = clock.now + length
        while clock.now < until {
            for (index, port) in run.metricsPorts.enumerated() where await readiness(port) != 200 {
                unready.insert(index)
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        let channels = try await channelsCreated() - channelsBefore
        try await end()
        let ended = clock.now
        var readyAfter: [Int: Duration] = [:]
        while readyAfter.count < run.metricsPorts.count, clock.now - ended < .seconds(60) {
            for (index, port) in run.metricsPorts.enumerated() where readyAfter[index] == nil {
                if await readiness(port) == 200 { readyAfter[index] = clock.now - ended }
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        await observed.record(channels: channels, unready: unready, readyAfter: readyAfter)
    }

    /// Channels and connections the broker has opened since it started (its management API's churn counters).
    private static func channelsCreated() async throws -> Int {
        let overview = try await http(
            "http://127.0.0.1:15672/api/overview",
            headers: ["Authorization": "Basic " + Data("guest:guest".utf8).base64EncodedString()])
        let churn = jsonObject(overview.text)["churn_rates"] as? [String: Any]
        return (churn?["channel_created"] as? Int ?? 0) + (churn?["connection_created"] as? Int ?? 0)
    }

    private static func readiness(_ port: Int) async -> Int {
        await httpStatus("http://127.0.0.1:\(port)/readyz")
    }

    /// Runs `sql` on the test server's main database (not the fleet's, whose sessions may be read-only).
    private static func postgres(_ sql: String) async throws {
        try await FleetHarness.shell("psql", [FleetHarness.databaseBase, "-q", "-c", sql])
    }

    private static func endSessions(of database: String) -> String {
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)'"
    }
}
