import BadgeWire
import Foundation
import Testing

@testable import BadgeCore

/// Fixture access and small builders shared by the tests.
enum Fixtures {
    static func fixtureURL(_ name: String, in folder: String) -> URL? {
        Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures/\(folder)")
    }

    static func names(in folder: String) -> [String] {
        guard let directory = Bundle.module.resourceURL?.appendingPathComponent("Fixtures/\(folder)"),
            let files = try? FileManager.default.contentsOfDirectory(atPath: directory.path)
        else { return [] }
        return files.filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
    }

    static func bytes(_ name: String, in folder: String) throws -> [UInt8] {
        let url = try #require(fixtureURL(name, in: folder))
        return Array(try Data(contentsOf: url))
    }
}

/// A fixed base instant: 2026-11-21T10:00:00Z.
let baseTime = Timestamp.parse("2026-11-21T10:00:00Z")!

/// `baseTime` plus `seconds`.
func at(_ seconds: Int64) -> Timestamp {
    baseTime.adding(microseconds: seconds * 1_000_000)
}

let alice = "u-alice"
let bob = EventActor(id: "u-bob", name: "Bob Stone", username: "bob")
let tokenA = "aaaa0000aaaa0000aaaa0000aaaa0000"
let tokenB = "bbbb1111bbbb1111bbbb1111bbbb1111"

func follow(_ id: String, at seconds: Int64, to recipient: String = alice, actor: EventActor = bob) -> Event {
    Event(id: id, type: .follow, recipient: recipient, occurredAt: at(seconds), actor: actor)
}

func message(_ id: String, at seconds: Int64, conversation: String = "conv-1", text: String? = "hi") -> Event {
    Event(
        id: id, type: .message, recipient: alice, occurredAt: at(seconds), actor: bob, conversationID: conversation,
        text: text)
}

func register(
    _ id: String, token: String, for recipient: String = alice, provider: PushProvider = .apns, at seconds: Int64 = 0
) -> Event {
    Event(
        id: id, type: .deviceRegistered, recipient: recipient, occurredAt: at(seconds),
        device: DeviceInfo(token: token, provider: provider, topic: nil, environment: .production))
}

func readState(
    _ id: String, _ type: EventType, at seconds: Int64, until: Int64? = nil, conversation: String? = nil,
    ids: [String] = []
) -> Event {
    Event(
        id: id, type: type, recipient: alice, occurredAt: at(seconds), conversationID: conversation,
        until: until.map { at($0) }, notificationIDs: ids)
}

func preferences(_ id: String, at seconds: Int64, badgeEnabled: Bool? = nil, previews: Bool? = nil) -> Event {
    Event(
        id: id, type: .preferencesUpdated, recipient: alice, occurredAt: at(seconds),
        preferences: PreferencesChange(badgeEnabled: badgeEnabled, previews: previews))
}
