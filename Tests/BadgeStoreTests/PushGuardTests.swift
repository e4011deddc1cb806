import BadgeCore
import BadgeWire
import Testing

@_spi(Testing) @testable import BadgeStore

/// The push guard's decisions, pure.
@Suite("Push guard")
struct PushGuardTests {
    private func push(_ version: Int64, token: String = "t", user: String = "u", alert: Bool = false) -> PlannedPush {
        let event = Event(
            id: "e\(version)", type: .follow, recipient: user, occurredAt: Timestamp(microsecondsSinceEpoch: 0))
        return PlannedPush(
            recipient: user, eventID: "e\(version)", eventType: .follow, token: token, provider: .apns,
            kind: alert ? .alert(event) : .badgeOnly, counts: .zero, badge: 0, badgeVersion: version)
    }

    @Test func stalePushesAreDroppedOrRebuiltAndForeignOnesDropped() {
        var guardState = PushGuard(devices: [
            "t": .init(user: "u", pushedVersion: 5), "moved": .init(user: "other", pushedVersion: 0),
        ])
        let decisions = guardState.decide([
            push(4), push(3, alert: true), push(9, token: "moved"), push(7, token: "never-stored"),
        ])
        #expect(decisions == [.drop(.superseded), .rebuild, .drop(.foreign), .send])
        // After a rebuild the device's version is fresh: every later push of the round is stale too.
        #expect(guardState.devices["t"]?.pushedVersion == PushGuard.fresh)
    }

    @Test func aBadgeOnlyPushFollowedByAnotherToTheSameDeviceIsCoalesced() {
        var guardState = PushGuard(devices: ["t": .init(user: "u", pushedVersion: 0)])
        let decisions = guardState.decide([
            push(1), push(2, alert: true), push(3), push(4), push(5, token: "x"), push(6, alert: true),
        ])
        #expect(decisions == [.drop(.superseded), .send, .drop(.superseded), .drop(.superseded), .send, .send])
        #expect(guardState.devices["t"]?.pushedVersion == 6)
    }

    @Test func theSameVersionMayBeSentAgain() {
        var guardState = PushGuard(devices: ["t": .init(user: "u", pushedVersion: 3)])
        #expect(guardState.decide([push(3, alert: true)]) == [.send])
    }
}
