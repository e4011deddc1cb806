import Foundation
import TestServices
import Testing

/// Three workers on PostgreSQL on the three-node cluster of `scripts/services cluster up`, every client given the
/// three nodes, under steady publishing: the node that leads most partition queues is killed (kill -9), then
/// brought back, then another node is stopped gracefully once stopping it leaves every queue a majority. Nothing
/// confirmed is lost, order holds, no worker exits, and the time from each fault to the first push after it is
/// printed.
@Suite("A three-node broker cluster", .serialized, .timeLimit(.minutes(8)))
struct ClusterTests {
    /// Runs `scripts/services cluster ARGUMENTS`.
    static func cluster(_ arguments: String, timeout: Duration = .seconds(150)) async throws {
        try await FleetHarness.shell("sh", ["-c", TestServices.clusterServices + " " + arguments], timeout: timeout)
    }

    /// The output of `scripts/services cluster ARGUMENTS`.
    static func clusterOutput(_ arguments: String) async throws -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("cluster-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        try await FleetHarness.shell(
            "sh", ["-c", TestServices.clusterServices + " " + arguments + " > " + output.path], timeout: .seconds(60))
        return (try? String(contentsOf: output, encoding: .utf8)) ?? ""
    }

    /// Every node running (a test that failed half-way may have left one down).
    static func wholeCluster() async throws {
        for node in 1...3 { try await cluster("start \(node)") }
    }

    /// The node (1–3) leading the most partition queues of `namespace`.
    static func nodeLeadingMost(namespace: String) async throws -> Int {
        let lines = try await clusterOutput("ctl any list_queues -q name leader")
        var led: [Int: Int] = [:]
        for line in lines.split(separator: "\n") where line.hasPrefix("\(namespace).events.") {
            guard let leader = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).last,
                let number = leader.firstMatch(of: /badgepipe-c(\d)@/).flatMap({ Int($0.1) })
            else { continue }
            led[number, default: 0] += 1
        }
        return led.max { $0.value < $1.value }?.key ?? 1
    }

    /// The cluster's node URLs, starting at node `first` (1–3).
    static func urls(startingAt first: Int) -> String {
        let urls = TestServices.clusterAMQPURLs.components(separatedBy: ",amqp").enumerated().map { index, part in
            index == 0 ? part : "amqp" + part
        }
        return (0..<urls.count).map { urls[(first - 1 + $0) % urls.count] }.joined(separator: ",")
    }

    /// `badgepipe setup` on the cluster prints each queue's members; a queue left with two members (one removed
    /// with `rabbitmq-queues delete_member`) is named in a warning and the command exits 3.
    @Test func setupReportsMembersAndWarnsAboutALonelyQueue() async throws {
        try await Self.wholeCluster()
        let namespace = "cluster-setup-\(UInt16.random(in: 0...UInt16.max))"
        let environment = [
            "BADGEPIPE_AMQP_URL": TestServices.clusterAMQPURLs, "BADGEPIPE_NAMESPACE": namespace,
            "BADGEPIPE_MANAGEMENT_URL": TestServices.clusterManagementURL,
        ]
        let setup = try await runBadgepipeInBackground(["setup"], environment: environment)
        #expect(setup.status == 0, "\(setup.output) \(setup.errors)")
        #expect(setup.output.contains("cluster: 3 nodes"), "\(setup.output)")
        for index in 0..<8 {
            #expect(setup.output.contains("\(namespace).events.\(index): quorum, 3 members"), "\(setup.output)")
        }
        #expect(setup.output.contains("\(namespace).dead: quorum, 3 members"), "\(setup.output)")
        #expect(!setup.errors.contains("warning:"), "\(setup.errors)")

        try await Self.cluster("queues any delete_member \(namespace).dead badgepipe-c2@localhost")
        // The management API reports members from statistics it gathers every few seconds: ask until it tells.
        let lonely = try await eventuallyValue(
            "setup warns about the dead queue", timeout: .seconds(60), every: .seconds(1)
        ) {
            let run = try await runBadgepipeInBackground(["setup"], environment: environment)
            return run.status != 0 ? run : nil
        }
        #expect(lonely.status == 3, "\(lonely.output) \(lonely.errors)")
        #expect(
            lonely.errors.contains(
                "warning: \(namespace).dead: 2 of 3 members (badgepipe-c1@localhost, badgepipe-c3@localhost)"),
            "\(lonely.errors)")
        #expect(!lonely.errors.contains("warning: \(namespace).events."), "\(lonely.errors)")
        try await FleetHarness.$broker.withValue(.cluster) { try await FleetHarness.cleanUp(namespace: namespace) }
    }

    @Test func theLeadingNodeKilledThenBackThenAnotherStopped() async throws {
        try await Self.wholeCluster()
        let seed: UInt64 = 31
        let times = PublishTimes()
        let faults = FaultTimes()
        let side = SidePublish()
        let report = try await FleetHarness.$broker.withValue(.cluster) {
            try await FleetHarness.run(seed: seed, rate: 50, publishTimes: times) { run in
                try await Task.sleep(for: .seconds(12))
                let victim = try await Self.nodeLeadingMost(namespace: run.namespace)
                // A CLI publish, connected first to the node about to be killed, into a namespace of its own that
                // no worker consumes: every event must be confirmed.
                let sideNamespace = run.namespace + "-side"
                let sideEnvironment = [
                    "BADGEPIPE_AMQP_URL": Self.urls(startingAt: victim), "BADGEPIPE_NAMESPACE": sideNamespace,
                ]
                let created = try await runBadgepipeInBackground(["setup"], environment: sideEnvironment)
                #expect(created.status == 0, "\(created.errors)")
                async let sidePublish = runBadgepipeInBackground(
                    ["publish", "--count", "2000", "--rate", "250", "--users", "50"], environment: sideEnvironment)
                try await Task.sleep(for: .seconds(2))

                faults.kill = Date()
                faults.killed = victim
                try await Self.cluster("kill \(victim)")
                try await Task.sleep(for: .seconds(8))
                try await Self.cluster("start \(victim)")
                side.result = try await sidePublish
                try await FleetHarness.cleanUp(namespace: sideNamespace)

                // Stopping another node is safe once every queue has its majority without it.
                let other = victim % 3 + 1
                try await Self.cluster("await-quorum \(other)")
                faults.stop = Date()
                faults.stopped = other
                try await Self.cluster("stop \(other)")
                try await Task.sleep(for: .seconds(6))
                try await Self.cluster("start \(other)")
                return 2
            }
        }
        try await Self.wholeCluster()
        let steps = FleetScript(seed: seed).steps
        let published = steps.indices.compactMap { times[$0] }
        let span = (published.last ?? Date()).timeIntervalSince(published.first ?? Date())
        func offset(_ date: Date?) -> String {
            String(format: "%.1f", (date ?? Date()).timeIntervalSince(published.first ?? Date()))
        }
        FleetTests.expectClean(report, allowDuplicates: true, "cluster")
        let sideResult = try #require(side.result)
        print("cluster: side publish: \(sideResult.output.split(separator: "\n").last ?? "")")
        #expect(sideResult.status == 0, "\(sideResult.output) \(sideResult.errors.suffix(2000))")
        #expect(sideResult.output.contains("2000 confirmed, 0 not confirmed"), "\(sideResult.output)")
        let spanText = String(format: "%.1f", span)
        if let kill = faults.kill {
            print(
                report.timing(
                    after: kill, window: 5, steps: steps, times: times,
                    name:
                        "cluster[kill -9 of node \(faults.killed), \(offset(kill)) s into \(spanText) s of publishing]"
                ))
        }
        if let stop = faults.stop {
            print(
                report.timing(
                    after: stop, window: 5, steps: steps, times: times,
                    name:
                        "cluster[graceful stop of node \(faults.stopped), \(offset(stop)) s into \(spanText) s of publishing]"
                ))
        }
        #expect(faults.kill != nil && faults.stop != nil)
    }
}

/// When the faults of a cluster run happened, and to which node.
final class FaultTimes: @unchecked Sendable {
    private let lock = NSLock()
    private var values: (kill: Date?, killed: Int, stop: Date?, stopped: Int) = (nil, 0, nil, 0)

    var kill: Date? {
        get { lock.withLock { values.kill } }
        set { lock.withLock { values.kill = newValue } }
    }
    var killed: Int {
        get { lock.withLock { values.killed } }
        set { lock.withLock { values.killed = newValue } }
    }
    var stop: Date? {
        get { lock.withLock { values.stop } }
        set { lock.withLock { values.stop = newValue } }
    }
    var stopped: Int {
        get { lock.withLock { values.stopped } }
        set { lock.withLock { values.stopped = newValue } }
    }
}

/// The outcome of the side `badgepipe publish` of a cluster run.
final class SidePublish: @unchecked Sendable {
    private let lock = NSLock()
    private var value: (status: Int32, output: String, errors: String)?

    var result: (status: Int32, output: String, errors: String)? {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
