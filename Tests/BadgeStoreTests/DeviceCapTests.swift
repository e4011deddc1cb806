import BadgeCore
import Testing

@_spi(Testing) @testable import BadgeStore

/// The cap on active devices per user: a registration beyond it drops the device registered longest ago.
@Suite("Devices per user")
struct DeviceCapTests {
    @Test(arguments: Backend.allCases)
    func aRegistrationBeyondTheCapDropsTheDeviceRegisteredLongestAgo(backend: Backend) async throws {
        try await withStore(backend) { store in
            let context = ApplyContext(maxDevicesPerUser: 2)
            // Registered at 10, 5 and 20 seconds (out of order): the one of 5 s goes.
            let registrations = [
                register("d1", token: "t1-aaaa", at: 10), register("d2", token: "t2-aaaa", at: 5),
                register("d3", token: "t3-aaaa", at: 20),
            ]
            _ = try await store.apply(registrations, policy: .unseen, context: context)
            let applied = try await store.apply([follow("n1", at: 30)], policy: .unseen, context: context)
            #expect(applied[0].pushes.map(\.push.token).sorted() == ["t1-aaaa", "t3-aaaa"])
            // Registering the dropped one again makes it the newest: now t1 (10 s) goes.
            _ = try await store.apply([register("d4", token: "t2-aaaa", at: 40)], policy: .unseen, context: context)
            let after = try await store.apply([follow("n2", at: 50)], policy: .unseen, context: context)
            #expect(after[0].pushes.map(\.push.token).sorted() == ["t2-aaaa", "t3-aaaa"])
        }
    }
}
