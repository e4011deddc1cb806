import BadgeCore
import BadgeSupport
import BadgeWire
import Foundation
import Testing

@_spi(Testing) @testable import BadgeStore

/// The store's read side of the app's API (`AppReads`), on both databases: counts that are the pushes' at the same
/// version, pages that neither repeat nor skip while notifications arrive, the unread by storage order, and the
/// conversations with unread messages.
@Suite("App reads")
struct AppReadsTests {
    static func message(_ id: String, at seconds: Int64, conversation: String, to user: String = "u-alice") -> Event {
        Event(
            id: id, type: .message, recipient: user, occurredAt: at(seconds), actor: bob, conversationID: conversation)
    }

    /// Guarantee 9 at the store: after every event of a seeded random run, a user's counts read for the API are
    /// those of the last push planned for that user, at the same `badge_version`.
    @Test(arguments: Backend.allCases)
    func countsAreThoseOfTheLastPushAtTheSameVersion(backend: Backend) async throws {
        try await withStore(backend) { store in
            var generator = SeededGenerator(seed: 9)
            let users = ["u-a", "u-b", "u-c"]
            for (index, user) in users.enumerated() {
                _ = try await store.apply(
                    [register("d-\(index)", token: String(format: "%032x", index + 1), for: user)], policy: .unread)
            }
            var compared = 0
            for step in 0..<120 {
                let user = users[Int(generator.next() % 3)]
                let second = Int64(step + 1)
                let event: Event
                switch generator.next() % 5 {
                case 0: event = Self.message("m\(step)", at: second, conversation: "c\(generator.next() % 2)", to: user)
                case 1:
                    event = Event(
                        id: "r\(step)", type: .notificationsReadAll, recipient: user, occurredAt: at(second - 3))
                case 2:
                    event = Event(id: "o\(step)", type: .notificationsOpened, recipient: user, occurredAt: at(second))
                default: event = follow("f\(step)", at: second, to: user)
                }
                let applied = try await store.apply([event], policy: .unread)
                guard let push = applied.last?.pushes.last?.push else { continue }
                let counts = try #require(try await store.userCounts([user], policy: .unread)[user])
                #expect(counts.badgeVersion == push.badgeVersion, "step \(step)")
                #expect(counts.counts == push.counts, "step \(step)")
                #expect(counts.badge == push.badge, "step \(step)")
                compared += 1
            }
            #expect(compared > 60)
            #expect(try await store.userCounts(["u-nobody"], policy: .unread)["u-nobody"] == .zero)
        }
    }

    /// Pages newest first, with ties on `occurred_at`: following the cursors while notifications arrive between
    /// pages (newer ones, and older ones that land after the cursor) gives every notification older than the
    /// first page's once, in order.
    @Test(arguments: Backend.allCases)
    func pagesNeitherRepeatNorSkipWhileNotificationsArrive(backend: Backend) async throws {
        try await withStore(backend) { store in
            // 30 notifications, three to each second.
            _ = try await store.apply(
                (0..<30).map { follow("n\(String(format: "%02d", $0))", at: Int64(100 + $0 / 3)) }, policy: .unseen)
            var seen: [String] = []
            var cursor: NotificationCursor?
            var page = 0
            repeat {
                let result = try await store.notifications(of: "u-alice", limit: 7, before: cursor, unreadOnly: false)
                seen += result.notifications.map(\.id)
                cursor = result.next
                page += 1
                // Newer ones arrive, and one older than everything, between pages.
                _ = try await store.apply(
                    [follow("new\(page)", at: 500 + Int64(page)), follow("old\(page)", at: Int64(page))],
                    policy: .unseen)
            } while cursor != nil && page < 20
            let expected =
                (0..<30).map { "n\(String(format: "%02d", $0))" }.sorted { ($0.dropFirst(), $0) > ($1.dropFirst(), $1) }
            let firstPass = seen.filter { $0.hasPrefix("n") }
            #expect(firstPass == (0..<30).reversed().map { "n\(String(format: "%02d", $0))" }, "\(seen)")
            #expect(Set(seen).count == seen.count, "no notification twice: \(seen)")
            #expect(!seen.contains { $0.hasPrefix("new") }, "nothing newer than the first page")
            #expect(expected.count == 30)
            let olds = seen.filter { $0.hasPrefix("old") }
            #expect(olds == olds.sorted(by: >), "the older arrivals in order: \(olds)")
        }
    }

    @Test(arguments: Backend.allCases)
    func unreadByStorageOrderAndConversations(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.apply([follow("a", at: 10), follow("b", at: 5)], policy: .unseen)
            let first = try await store.unreadNotifications(of: "u-alice", storedAfter: 0, limit: 10)
            #expect(Set(first.map(\.id)) == ["a", "b"])
            #expect(first.allSatisfy { $0.storedAt > 0 && $0.eventJSON?.contains("\"follow\"") == true })
            let after = try #require(first.map(\.storedAt).max())
            _ = try await store.apply(
                [
                    follow("c", at: 1),
                    Event(
                        id: "r", type: .notificationRead, recipient: "u-alice", occurredAt: at(20),
                        notificationIDs: ["a"]),
                ], policy: .unseen)
            #expect(
                try await store.unreadNotifications(of: "u-alice", storedAfter: after, limit: 10).map(\.id) == ["c"])
            let unread = try await store.notifications(of: "u-alice", limit: 10, before: nil, unreadOnly: true)
            #expect(unread.notifications.map(\.id) == ["b", "c"])
            #expect(unread.next == nil)

            _ = try await store.apply(
                [
                    Self.message("m1", at: 10, conversation: "c-old"),
                    Self.message("m2", at: 30, conversation: "c-new"),
                    Self.message("m3", at: 40, conversation: "c-new"),
                    Self.message("m4", at: 20, conversation: "c-mid"),
                ], policy: .unseen)
            let page = try await store.conversations(of: "u-alice", limit: 2, before: nil)
            #expect(page.conversations.map(\.conversationID) == ["c-new", "c-mid"])
            #expect(page.conversations.first?.unreadMessages == 2)
            let rest = try await store.conversations(of: "u-alice", limit: 2, before: page.next)
            #expect(rest.conversations.map(\.conversationID) == ["c-old"])
            #expect(rest.next == nil)
        }
    }
}
