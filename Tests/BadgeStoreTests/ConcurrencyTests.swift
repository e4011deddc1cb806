import BadgeCore
import BadgeModel
import Foundation
import Testing

@_spi(Testing) @testable import BadgeStore

@Suite("Concurrent writers")
struct ConcurrencyTests {
    /// Two stores (two workers) apply interleaved, order-insensitive events for one user from two tasks: the
    /// counts end equal to the model's and every push carries a distinct badge version.
    @Test(arguments: [Backend.postgres, Backend.sqlite])
    func twoWritersForOneUser(backend: Backend) async throws {
        try await withStores(backend, count: 2) { stores in
            let user = "u-alice"
            _ = try await stores[0].apply([register("d1", token: tokenA, for: user)], policy: .unseen)
            var events: [Event] = []
            for index in 0..<200 {
                let actor = EventActor(id: "u-fan\(index % 13)", name: "Fan")
                events.append(follow("n\(index)", at: Int64(index), to: user, actor: actor))
                if index % 10 == 9 {
                    events.append(
                        Event(
                            id: "r\(index)", type: .notificationRead, recipient: user, occurredAt: at(Int64(index)),
                            notificationIDs: ["n\(index - 3)", "n\(index + 5)"]))
                }
                if index == 120 {
                    events.append(
                        Event(
                            id: "o\(index)", type: .notificationsOpened, recipient: user, occurredAt: at(300),
                            until: at(60)))
                }
            }
            let halves = [
                events.enumerated().filter { $0.offset % 2 == 0 }.map(\.element),
                events.enumerated().filter { $0.offset % 2 == 1 }.map(\.element),
            ]
            let applied = try await withThrowingTaskGroup(of: [AppliedEvent].self) { group in
                for (store, half) in zip(stores, halves) {
                    group.addTask {
                        var results: [AppliedEvent] = []
                        for batch in half.chunked(5) {
                            results += try await applyRetrying(store, Array(batch), policy: .unseen)
                        }
                        return results
                    }
                }
                var all: [AppliedEvent] = []
                for try await results in group { all += results }
                return all
            }
            var model = InboxModel(policy: .unseen)
            _ = modelPushes(&model, [register("d1", token: tokenA, for: user)] + events)

            let snapshot = try await stores[1].snapshot(user: user)
            #expect(snapshot.counts == model.counts(of: user))
            #expect(applied.allSatisfy { !$0.duplicate })
            let versions = applied.flatMap { $0.pushes.map(\.push.badgeVersion) }
            #expect(Set(versions).count == versions.count, "badge versions are distinct")
            #expect(versions.max() == snapshot.badgeVersion)
            // Per store the versions it planned increase.
            let outbox = try await stores[0].pendingPushes(limit: 10_000)
            #expect(outbox.count == versions.count + 1)
            #expect(outbox.map(\.push.badgeVersion) == outbox.map(\.push.badgeVersion).sorted())
        }
    }

    /// Batches that lock several users in opposite orders do not deadlock each other.
    @Test func crossUserBatchesOnPostgres() async throws {
        try await withStores(.postgres, count: 2) { stores in
            let users = ["u-a", "u-b", "u-c", "u-d"]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (offset, store) in stores.enumerated() {
                    group.addTask {
                        for round in 0..<40 {
                            let order = offset == 0 ? users : users.reversed()
                            let batch = order.map { follow("n\(offset)-\(round)-\($0)", at: Int64(round), to: $0) }
                            _ = try await applyRetrying(store, batch, policy: .unseen)
                        }
                    }
                }
                try await group.waitForAll()
            }
            for user in users {
                let snapshot = try await stores[0].snapshot(user: user)
                #expect(snapshot.counts.unreadNotifications == 80)
                #expect(snapshot.badgeVersion == 80)
            }
        }
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements.
    fileprivate func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
