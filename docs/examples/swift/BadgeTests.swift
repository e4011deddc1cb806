// End-to-end tests of a BadgePipe deployment in Swift, written with the `BadgePipeTesting` library: publish events,
// then wait at the sink until each phone shows what it must. No sleeps, no polling loops.
//
// In your package: `.product(name: "BadgePipeTesting", package: "badgepipe")` in your test target's dependencies.
// Run against `docker compose up` with
//
//     BADGEPIPE_SINK_URL=http://127.0.0.1:8787 \
//     BADGEPIPE_PUBLISH="docker compose run --rm -T publish --file -" swift test --filter BadgeTests
//
// Environment: BADGEPIPE_SINK_URL (the sink), BADGEPIPE_PUBLISH (a command that publishes the JSON events on its
// standard input, one a line). Without BADGEPIPE_SINK_URL the tests are skipped.
import BadgePipeTesting
import Foundation
import Testing

@Suite("Badges end to end", .enabled(if: ProcessInfo.processInfo.environment["BADGEPIPE_SINK_URL"] != nil))
struct BadgeTests {
    let sink = SinkClient()

    @Test func aFollowShowsBadgeOneWithItsAlert() async throws {
        let phone = Phone()
        try await publish([phone.register(), phone.follow("Ada")])
        let device = try await sink.waitForBadge(1, token: phone.token, timeout: .seconds(30))
        #expect(device.lastAlert?.title == "New follower")
        #expect(device.alerts == 1)
    }

    @Test func readingEverythingClearsTheBadgeWithABadgeOnlyPush() async throws {
        let phone = Phone()
        try await publish([phone.register(), phone.follow("Ada"), phone.follow("Grace")])
        _ = try await sink.waitForBadge(2, token: phone.token, timeout: .seconds(30))
        try await publish([phone.event("notifications_read_all")])
        let device = try await sink.waitForBadge(0, token: phone.token, timeout: .seconds(30))
        #expect(device.alerts == 2)
        #expect(device.badgeOnly >= 1)
    }

    @Test func aProviderErrorIsRetriedAndTheBadgeArrives() async throws {
        let phone = Phone()
        try await sink.addFault(SinkFault(token: phone.token, status: 503, reason: "ServiceUnavailable", times: 1))
        try await publish([phone.register(), phone.follow("Ada")])
        let device = try await sink.waitForBadge(1, token: phone.token, timeout: .seconds(30))
        #expect(device.failed == 1)
        #expect(device.alerts == 1)
        let pushes = try await sink.deliveries(SinkDeliveryFilter(tokens: [phone.token]))
        #expect(pushes.map(\.status) == [503, 200])
    }
}

/// One user with one device, both unique to the test, so that tests can run together against one sink.
struct Phone {
    let user: String
    let token: String

    init() {
        let suffix = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        user = "u-test-\(suffix.prefix(12))"
        token = suffix + suffix
    }

    func event(_ type: String, _ fields: [String: Any] = [:]) -> [String: Any] {
        let id = "\(user)-\(UUID().uuidString)"
        let now = ISO8601DateFormatter().string(from: Date())
        return ["id": id, "type": type, "recipient": user, "occurred_at": now].merging(fields) { $1 }
    }

    func register() -> [String: Any] {
        event("device_registered", ["device": ["token": token, "provider": "apns"]])
    }

    func follow(_ name: String) -> [String: Any] {
        event("follow", ["actor": ["id": "u-\(name.lowercased())", "name": name]])
    }
}

/// Publishes `events` with confirms through `BADGEPIPE_PUBLISH` (default `badgepipe publish --file -`).
func publish(_ events: [[String: Any]]) async throws {
    let lines = try events.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    let command = ProcessInfo.processInfo.environment["BADGEPIPE_PUBLISH"] ?? "badgepipe publish --file -"
    process.arguments = ["-c", command]
    let input = Pipe()
    process.standardInput = input
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    input.fileHandleForWriting.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    try input.fileHandleForWriting.close()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "\(command) failed")
}
