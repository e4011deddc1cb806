import BadgeCore
import BadgeWire
import Testing

@_spi(Testing) @testable import BadgeStore

/// `device.app` (contract v1.1) is kept with the device and carried by every push planned for it, through the
/// outbox and every kind of claim, so that the delivery stage sends it with its app's credentials.
@Suite("Device apps")
struct DeviceAppTests {
    private static func register(_ id: String, token: String, app: String?, at seconds: Int64 = 0) -> Event {
        Event(
            id: id, type: .deviceRegistered, recipient: "u-alice", occurredAt: at(seconds),
            device: DeviceInfo(token: token, provider: .apns, topic: "com.example.app", app: app))
    }

    @Test(arguments: Backend.allCases, [false, true])
    func aDevicesAppTravelsWithItsPushesThroughTheOutbox(backend: Backend, leased: Bool) async throws {
        try await withStore(backend) { store in
            let lease = try await OutboxEventTests.lease(store, leased)
            let context = ApplyContext(partition: 0, lease: lease)
            let applied = try await store.apply(
                [Self.register("d1", token: tokenA, app: "amen-ios"), Self.register("d2", token: tokenB, app: nil)],
                policy: .unseen, context: context)
            #expect(applied.flatMap(\.pushes).map(\.push.app) == ["amen-ios", nil], "the registrations' badge pushes")
            _ = try await store.apply([follow("n1", at: 1)], policy: .unseen, context: context)
            let devices = try await store.snapshot(user: "u-alice").devices
            #expect(devices.map(\.app) == ["amen-ios", nil])
            let claimed = try await store.claimPushes(
                partition: 0, limit: 100, policy: .unseen, lease: lease, skipClaimedBefore: nil,
                recording: DeliveryRecord())
            let apps = Dictionary(grouping: claimed.pushes, by: \.push.token).mapValues { Set($0.map(\.push.app)) }
            #expect(apps[tokenA] == ["amen-ios"] && apps[tokenB] == [nil], "\(apps)")
            #expect(claimed.refused.isEmpty)
            // Registered again without an app: the device has none from then on.
            _ = try await store.apply(
                [Self.register("d3", token: tokenA, app: nil, at: 2)], policy: .unseen, context: context)
            #expect(try await store.snapshot(user: "u-alice").devices.map(\.app) == [nil, nil])
        }
    }
}
