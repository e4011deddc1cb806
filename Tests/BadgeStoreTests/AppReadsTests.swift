import BadgeCore
import BadgeModel
import BadgeSupport
import BadgeWire
import Foundation
import Testing

@_spi(Testing) @testable import BadgeStore

/// The store's read side of the app's API (`AppReads`), on both databases: counts that are the pushes' at the same
/// version, lists that are the reference model's, pages that neither repeat nor skip while notifications arrive,
/// the unread by storage order, the conversations with unread messages, the bounds, and a database migrated from
/// before the store kept each notification's event.
@Suite("App reads")
struct AppReadsTests {
    static func message(_ id: String, at seconds: Int64, conversation: String, to user: String = "u-alice") -> Event {
        Event(
            id: id, type: .message, recipient: user, occurredAt: at(seconds), actor: bob, conversationID: conversation)
    }

    static func read(_ id: String, at seconds: Int64, _ ids: [String], of user: String = "u-alice") -> Event {
        Event(id: id, type: .notificationRead, recipient: user, occurredAt: at(seconds), notificationIDs: ids)
    }

    /// Every page of `user`'s notifications, following the cursors: each page at most `limit` long, full when a
    /// next page follows, its cursor the position of its last notification.
    static func allPages(
        _ store: any SQLBackedStore, of user: String, limit: Int, unreadOnly: Bool = false,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [StoredNotification] {
        var all: [StoredNotification] = []
        var cursor: NotificationCursor?
        repeat {
            let page = try await store.notifications(of: user, limit: limit, before: cursor, unreadOnly: unreadOnly)
            #expect(page.notifications.count <= limit, sourceLocation: sourceLocation)
            if let next = page.next {
                #expect(
                    page.notifications.count == limit, "a page before another is full", sourceLocation: sourceLocation)
                #expect(
                    next == page.notifications.last.map { NotificationCursor(occurredAt: $0.occurredAt, id: $0.id) },
                    sourceLocation: sourceLocation)
            }
            all += page.notifications
            cursor = page.next
        } while cursor != nil && all.count < 10_000
        return all
    }

    /// Every page of `user`'s conversations with unread messages, following the cursors.
    static func allConversations(
        _ store: any SQLBackedStore, of user: String, limit: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [ConversationSummary] {
        var all: [ConversationSummary] = []
        var cursor: ConversationCursor?
        repeat {
            let page = try await store.conversations(of: user, limit: limit, before: cursor)
            #expect(page.conversations.count <= limit, sourceLocation: sourceLocation)
            if page.next != nil {
                #expect(page.conversations.count == limit, sourceLocation: sourceLocation)
            }
            all += page.conversations
            cursor = page.next
        } while cursor != nil && all.count < 10_000
        return all
    }

    /// Guarantee 9 at the store, over the reference model's random runs (every event type, duplicates, tombstones,
    /// watermarks, device moves, preferences) in random batches: after each batch, every user's counts as the API
    /// reads them are the model's, and those of the last push planned for that user whenever that push is at the
    /// user's current `badge_version`. The lists are the model's too: every notification once, newest first, with
    /// its read and seen state and its event's JSON; the unread ones alone; the conversations with unread messages.
    @Test(arguments: Backend.allCases, 1...4)
    func aRandomRunReadsAsTheModelAndThePushesCarry(backend: Backend, seed: Int) async throws {
        try await withStore(backend) { store in
            var generator = RandomEvents(seed: UInt64(seed) &+ 1_000)
            var rng = SeededGenerator(seed: UInt64(seed) &* 104_729)
            let policy: BadgePolicy = seed.isMultiple(of: 2) ? .unread : .unseen
            var model = InboxModel(policy: policy)
            var lastPush: [String: PlannedPush] = [:]
            var events: [String: Event] = [:]
            var atTheirVersion = 0
            var listed = 0
            var total = 0
            var batchNumber = 0
            while total < 250 {
                let batch = (0..<Int.random(in: 1...20, using: &rng)).map { _ in generator.next() }
                total += batch.count
                batchNumber += 1
                let context = "seed \(seed) batch \(batchNumber)"
                for event in batch where events[event.id] == nil { events[event.id] = event }
                let applied = try await store.apply(batch, policy: policy)
                for event in batch { _ = model.apply(event) }
                for push in pushes(applied) { lastPush[push.recipient] = push }

                let users = RandomEvents.users + ["u-nobody"]
                let read = try await store.userCounts(users, policy: policy)
                #expect(read.keys.sorted() == users.sorted(), "\(context)")
                for user in users {
                    let counts = try #require(read[user], "\(context): \(user)")
                    #expect(
                        counts
                            == UserCounts(
                                counts: model.counts(of: user), badge: model.badge(of: user),
                                badgeVersion: model.badgeVersion(of: user)),
                        "\(context): \(user)")
                    guard let push = lastPush[user], push.badgeVersion == counts.badgeVersion else { continue }
                    #expect(counts.counts == push.counts, "\(context): \(user) at version \(push.badgeVersion)")
                    #expect(counts.badge == push.badge, "\(context): \(user) at version \(push.badgeVersion)")
                    atTheirVersion += 1
                }

                for user in RandomEvents.users {
                    let expected = model.notifications(of: user)
                    let limit = Int.random(in: 1...9, using: &rng)
                    let all = try await Self.allPages(store, of: user, limit: limit)
                    #expect(all.map(\.id) == expected.map(\.id), "\(context): \(user)'s list by \(limit)")
                    for (stored, listed) in zip(all, expected) where stored.id == listed.id {
                        #expect(stored.occurredAt == listed.occurredAt.microsecondsSinceEpoch, "\(context)")
                        #expect(stored.read == listed.read, "\(context): \(user)'s \(stored.id) read")
                        #expect(stored.seen == listed.seen, "\(context): \(user)'s \(stored.id) seen")
                        #expect(stored.storedAt > 0, "\(context)")
                        let json = try #require(stored.eventJSON, "\(context): \(stored.id)")
                        let decoded = try EventDecoder.decode(body: Array(json.utf8), contentType: nil).get()
                        #expect(decoded == events[stored.id], "\(context): \(stored.id)'s event")
                    }
                    let unread = try await Self.allPages(store, of: user, limit: limit, unreadOnly: true)
                    #expect(unread.map(\.id) == expected.filter { !$0.read }.map(\.id), "\(context): \(user) unread")
                    let conversations = try await Self.allConversations(store, of: user, limit: 2)
                    #expect(
                        conversations
                            == model.unreadConversations(of: user).map {
                                ConversationSummary(
                                    conversationID: $0.conversationID, unreadMessages: $0.unreadMessages,
                                    lastMessageAt: $0.lastMessageAt.microsecondsSinceEpoch)
                            },
                        "\(context): \(user)'s conversations")
                    listed += all.count
                }
                try await store.recordDeliveries(
                    DeliveryRecord(sent: try await store.pendingPushes(limit: 100_000).map(\.id)))
            }
            #expect(atTheirVersion > 20 && listed > 100, "\(atTheirVersion) \(listed)")
        }
    }

    /// Pages newest first with many ties on `occurred_at`, checked page by page against the list as it stands when
    /// the page is read: the page is its first notifications strictly after the cursor, while notifications arrive
    /// between pages (newer than everything, older than everything, and at the cursor's own time with an id on
    /// either side of its id). So following the cursors gives each notification that was there at the start once,
    /// in order, with the older arrivals in their places, and nothing newer than the page before.
    @Test(arguments: Backend.allCases)
    func pagesNeitherRepeatNorSkipWhileNotificationsArrive(backend: Backend) async throws {
        try await withStore(backend) { store in
            var stored: [(occurredAt: Int64, id: String)] = []
            func add(_ events: [Event]) async throws {
                _ = try await store.apply(events, policy: .unseen)
                stored += events.map { ($0.occurredAt.microsecondsSinceEpoch, $0.id) }
            }
            // 30 notifications, three to each second.
            try await add((0..<30).map { follow(String(format: "n%02d", $0), at: Int64(100 + $0 / 3)) })
            let initial = Set(stored.map(\.id))
            var seen: [String] = []
            var cursor: NotificationCursor?
            var pages = 0
            repeat {
                let page = try await store.notifications(of: "u-alice", limit: 4, before: cursor, unreadOnly: false)
                let list = stored.sorted { ($0.occurredAt, $0.id) > ($1.occurredAt, $1.id) }
                let after = list.filter { entry in
                    cursor.map { (entry.occurredAt, entry.id) < ($0.occurredAt, $0.id) } ?? true
                }
                #expect(page.notifications.map(\.id) == after.prefix(4).map(\.id), "page \(pages)")
                #expect((page.next != nil) == (after.count > 4), "page \(pages)")
                seen += page.notifications.map(\.id)
                cursor = page.next
                pages += 1
                guard let last = page.notifications.last else { break }
                let second = last.occurredAt / 1_000_000 - baseTime.microsecondsSinceEpoch / 1_000_000
                let number = String(format: "%03d", pages)
                try await add([
                    follow("z\(number)", at: 500 + Int64(pages)),
                    follow("a\(number)", at: Int64(pages)),
                    // At the cursor's time: "m…" sorts after "n…" (after the cursor), "o…" before it (before the
                    // cursor), once the cursor is among the "n…".
                    follow("m\(number)", at: second), follow("o\(number)", at: second),
                ])
            } while cursor != nil && pages < 100
            #expect(Set(seen).count == seen.count, "no notification twice: \(seen)")
            #expect(seen.filter(initial.contains) == initial.sorted(by: >), "each initial one once, in order")
            #expect(!seen.contains { $0.hasPrefix("z") || $0.hasPrefix("o") }, "nothing before the cursor")
            #expect(seen.filter { $0.hasPrefix("m") }.count >= 5, "those at the cursor's time after its id")
            let olds = seen.filter { $0.hasPrefix("a") }
            #expect(!olds.isEmpty && olds == olds.sorted(by: >), "the older arrivals in order: \(olds)")
        }
    }

    /// With `unreadOnly` the pages hold the unread ones alone, also when some are read between pages.
    @Test(arguments: Backend.allCases)
    func unreadOnlyPagesSkipTheReadOnes(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.apply(
                (0..<12).map { follow(String(format: "n%02d", $0), at: Int64(10 + $0 / 2)) }
                    + [Self.read("r1", at: 50, ["n11", "n08", "n03"])], policy: .unseen)
            let first = try await store.notifications(of: "u-alice", limit: 3, before: nil, unreadOnly: true)
            #expect(first.notifications.map(\.id) == ["n10", "n09", "n07"])
            #expect(first.notifications.allSatisfy { !$0.read })
            // n06 and n00 read between pages.
            _ = try await store.apply([Self.read("r2", at: 51, ["n06", "n00", "n99"])], policy: .unseen)
            let rest = try await store.notifications(of: "u-alice", limit: 10, before: first.next, unreadOnly: true)
            #expect(rest.notifications.map(\.id) == ["n05", "n04", "n02", "n01"])
            #expect(rest.next == nil)
            let everything = try await Self.allPages(store, of: "u-alice", limit: 5)
            #expect(everything.count == 12)
            #expect(everything.filter(\.read).map(\.id) == ["n11", "n08", "n06", "n03", "n00"])
        }
    }

    /// The stream's read: the unread notifications stored after a time, in storage order (a batch's share one time;
    /// later batches never an earlier one), each with its event's JSON; read ones and messages are not in it.
    @Test(arguments: Backend.allCases)
    func unreadNotificationsComeInStorageOrder(backend: Backend) async throws {
        try await withStore(backend) { store in
            let batches: [[Event]] = [
                [follow("b1x", at: 30), follow("b1y", at: 5)],
                [follow("b2x", at: 1), Self.message("b2m", at: 2, conversation: "c1"), follow("b2y", at: 40)],
                [Self.read("b3r", at: 60, ["b3y"]), follow("b3x", at: 20), follow("b3y", at: 21)],
            ]
            var applied: [Event] = []
            for batch in batches {
                _ = try await store.apply(batch, policy: .unseen)
                applied += batch
                // SQLite's clock counts milliseconds: the next batch is stored at a later one.
                try await Task.sleep(for: .milliseconds(5))
            }
            let all = try await store.unreadNotifications(of: "u-alice", storedAfter: 0, limit: 100)
            #expect(all.map(\.id) == ["b1x", "b1y", "b2x", "b2y", "b3x"])
            #expect(all.allSatisfy { $0.storedAt > 0 && !$0.read })
            let times = Dictionary(grouping: all, by: { $0.id.prefix(2) }).mapValues { Set($0.map(\.storedAt)) }
            #expect(times.values.allSatisfy { $0.count == 1 }, "one time per batch: \(times)")
            let first = try #require(times["b1"]?.first)
            let second = try #require(times["b2"]?.first)
            let third = try #require(times["b3"]?.first)
            #expect(first < second && second < third)
            for notification in all {
                let json = try #require(notification.eventJSON)
                let event = try EventDecoder.decode(body: Array(json.utf8), contentType: nil).get()
                #expect(event == applied.first { $0.id == notification.id })
            }

            #expect(
                try await store.unreadNotifications(of: "u-alice", storedAfter: first, limit: 100).map(\.id)
                    == ["b2x", "b2y", "b3x"])
            #expect(
                try await store.unreadNotifications(of: "u-alice", storedAfter: first, limit: 2).map(\.id)
                    == ["b2x", "b2y"])
            #expect(try await store.unreadNotifications(of: "u-alice", storedAfter: third, limit: 100).isEmpty)
            // Limits are clamped to 1...pageSize.
            #expect(
                try await store.unreadNotifications(of: "u-alice", storedAfter: 0, limit: 0).map(\.id) == ["b1x"])
            // A read one leaves the stream.
            _ = try await store.apply([Self.read("r", at: 70, ["b2y"])], policy: .unseen)
            #expect(
                try await store.unreadNotifications(of: "u-alice", storedAfter: first, limit: 100).map(\.id)
                    == ["b2x", "b3x"])
            // Many users in one statement, each after its own time: what each one's own read gives.
            for (after, limit) in [(Int64(0), 100), (first, 100), (first, 1), (third, 100)] {
                let many = try await store.unreadNotifications(since: ["u-alice": after, "u-nobody": 0], limit: limit)
                let one = try await store.unreadNotifications(of: "u-alice", storedAfter: after, limit: limit)
                #expect(many["u-alice", default: []].map(\.id) == one.map(\.id), "after \(after), limit \(limit)")
                #expect(many["u-nobody"] == nil)
            }
            // The read-on-arrival one keeps its event too, in the list.
            let list = try await Self.allPages(store, of: "u-alice", limit: 100)
            #expect(list.first { $0.id == "b3y" }?.eventJSON?.contains("\"b3y\"") == true)
            #expect(!list.contains { $0.id == "b2m" }, "messages are not notifications")
        }
    }

    /// Conversations with unread messages, latest first (ties by id, descending), paged by cursor, with their
    /// unread counts; a conversation read leaves the list.
    @Test(arguments: Backend.allCases)
    func conversationsPageLatestFirst(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.apply(
                [
                    Self.message("m1", at: 10, conversation: "c-old"),
                    Self.message("m2", at: 30, conversation: "c-new"),
                    Self.message("m3", at: 40, conversation: "c-new"),
                    Self.message("m4", at: 20, conversation: "c-mid"),
                    Self.message("m5", at: 20, conversation: "c-tie"),
                    Self.message("m6", at: 5, conversation: "c-tie"),
                    Self.message("m7", at: 50, conversation: "c-read"),
                    Event(
                        id: "r", type: .conversationRead, recipient: "u-alice", occurredAt: at(60),
                        conversationID: "c-read"),
                    follow("n1", at: 70),
                ], policy: .unseen)
            let page = try await store.conversations(of: "u-alice", limit: 2, before: nil)
            #expect(
                page.conversations == [
                    ConversationSummary(
                        conversationID: "c-new", unreadMessages: 2, lastMessageAt: at(40).microsecondsSinceEpoch),
                    ConversationSummary(
                        conversationID: "c-tie", unreadMessages: 2, lastMessageAt: at(20).microsecondsSinceEpoch),
                ])
            #expect(
                page.next == ConversationCursor(lastMessageAt: at(20).microsecondsSinceEpoch, conversationID: "c-tie"))
            let rest = try await store.conversations(of: "u-alice", limit: 2, before: page.next)
            #expect(rest.conversations.map(\.conversationID) == ["c-mid", "c-old"])
            #expect(rest.next == nil)
            #expect(try await store.conversations(of: "u-alice", limit: 0, before: nil).conversations.count == 1)
            _ = try await store.apply(
                [
                    Event(
                        id: "r2", type: .conversationRead, recipient: "u-alice", occurredAt: at(80),
                        conversationID: "c-tie")
                ], policy: .unseen)
            #expect(
                try await Self.allConversations(store, of: "u-alice", limit: 1).map(\.conversationID)
                    == ["c-new", "c-mid", "c-old"])
        }
    }

    /// A user the store never saw reads as nothing; a read takes up to 1,000 users in one statement (a user named
    /// twice once) and refuses more; page sizes are clamped to 1...100.
    @Test(arguments: Backend.allCases)
    func anUnknownUserAndTheBounds(backend: Backend) async throws {
        try await withStore(backend) { store in
            let nobody = "u-nobody"
            #expect(try await store.userCounts([nobody], policy: .unseen) == [nobody: .zero])
            #expect(
                try await store.notifications(of: nobody, limit: 10, before: nil, unreadOnly: false)
                    == NotificationPage(notifications: [], next: nil))
            #expect(try await store.unreadNotifications(of: nobody, storedAfter: 0, limit: 10).isEmpty)
            #expect(
                try await store.conversations(of: nobody, limit: 10, before: nil)
                    == ConversationPage(conversations: [], next: nil))
            #expect(try await store.userCounts([], policy: .unseen).isEmpty)

            let carol = EventActor(id: "u-carol", name: "Carol")
            _ = try await store.apply(
                (0..<105).map { follow(String(format: "n%03d", $0), at: Int64($0)) } + [
                    follow("d1", at: 1, to: "u-dave", actor: carol),
                    Event(
                        id: "m1", type: .message, recipient: "u-dave", occurredAt: at(2), actor: carol,
                        conversationID: "c"),
                ], policy: .unseen)
            let users = (0..<998).map { String(format: "u-%04d", $0) } + ["u-alice", "u-dave"]
            let counts = try await store.userCounts(users + ["u-dave", "u-0001"], policy: .unseen)
            #expect(counts.count == 1_000)
            #expect(counts.values.filter { $0 == .zero }.count == 998)
            #expect(
                counts["u-alice"]
                    == UserCounts(
                        counts: Counts(unreadNotifications: 105, unseenNotifications: 105, unreadMessages: 0),
                        badge: 105, badgeVersion: 105))
            #expect(
                counts["u-dave"]
                    == UserCounts(
                        counts: Counts(unreadNotifications: 1, unseenNotifications: 1, unreadMessages: 1), badge: 2,
                        badgeVersion: 2))
            // The badge is the policy's and the user's preference's.
            _ = try await store.apply(
                [
                    Event(id: "o1", type: .notificationsOpened, recipient: "u-dave", occurredAt: at(3)),
                    Event(
                        id: "p1", type: .preferencesUpdated, recipient: "u-alice", occurredAt: at(3),
                        preferences: PreferencesChange(badgeEnabled: false, previews: nil)),
                ], policy: .unseen)
            let after = try await store.userCounts(["u-dave", "u-alice"], policy: .unseen)
            #expect(after["u-dave"]?.badge == 1)
            #expect(try await store.userCounts(["u-dave"], policy: .unread)["u-dave"]?.badge == 2)
            #expect(after["u-alice"]?.badge == 0)
            #expect(after["u-alice"]?.counts.unreadNotifications == 105)
            let error = await #expect(throws: StoreError.self) {
                try await store.userCounts(users + ["u-one-too-many"], policy: .unseen)
            }
            #expect(error?.code == .tooManyUsers)
            #expect(error?.transient == false)

            let most = try await store.notifications(of: "u-alice", limit: 1_000, before: nil, unreadOnly: false)
            #expect(most.notifications.count == AppReadLimits.pageSize)
            #expect(most.next?.id == "n005")
            let least = try await store.notifications(of: "u-alice", limit: 0, before: nil, unreadOnly: false)
            #expect(least.notifications.map(\.id) == ["n104"])
            #expect(least.next == NotificationCursor(occurredAt: at(104).microsecondsSinceEpoch, id: "n104"))
            let negative = try await store.notifications(of: "u-alice", limit: -3, before: nil, unreadOnly: true)
            #expect(negative.notifications.count == 1)
        }
    }

    /// A database from before the store kept each notification's event (version 10) migrates in place: its
    /// counts read as they were, its notifications list with no event and no storage time (so the stream leaves
    /// them out), beside new ones that have both; a row an older badgepipe writes after the migration reads the
    /// same way.
    @Test(arguments: Backend.allCases)
    func aDatabaseFromBeforeTheAppReadsKeepsWorking(backend: Backend) async throws {
        try await withStores(backend, migrate: false) { stores in
            let store = stores[0]
            let database = store.sqlBackend.database
            let prelude = (store as? PostgresStore)?.schema.map { ["CREATE SCHEMA IF NOT EXISTS \"\($0)\""] } ?? []
            try await Schema.migrate(database, prelude: prelude, through: 10)
            // What a version-10 worker wrote after a follow n-old and a message in c-old.
            try await database.transaction { sql in
                try await sql.execute(
                    "INSERT INTO users (user_id, unread_notifications, unseen_notifications, unread_messages, "
                        + "badge_version) VALUES ('u-alice', 1, 1, 1, 2)")
                try await sql.execute(
                    "INSERT INTO notifications (user_id, id, occurred_at, read, seen) VALUES ('u-alice', 'n-old', $1, "
                        + "FALSE, FALSE)",
                    [.int(at(10).microsecondsSinceEpoch)])
                try await sql.execute(
                    "INSERT INTO messages (user_id, event_id, conversation_id, occurred_at, read) "
                        + "VALUES ('u-alice', 'm-old', 'c-old', $1, FALSE)",
                    [.int(at(11).microsecondsSinceEpoch)])
                try await sql.execute("INSERT INTO processed_events (event_id) VALUES ('n-old'), ('m-old')")
            }
            try await store.migrate()
            #expect(
                try await store.userCounts(["u-alice"], policy: .unseen)["u-alice"]
                    == UserCounts(
                        counts: Counts(unreadNotifications: 1, unseenNotifications: 1, unreadMessages: 1), badge: 2,
                        badgeVersion: 2))

            _ = try await store.apply([follow("n-new", at: 5), follow("n-old", at: 10)], policy: .unseen)
            // An older badgepipe still running against the migrated schema stores one its way.
            try await database.transaction { sql in
                try await sql.execute(
                    "INSERT INTO notifications (user_id, id, occurred_at, read, seen) VALUES ('u-alice', 'n-older', "
                        + "$1, FALSE, FALSE)",
                    [.int(at(20).microsecondsSinceEpoch)])
            }
            let list = try await Self.allPages(store, of: "u-alice", limit: 2)
            #expect(list.map(\.id) == ["n-older", "n-old", "n-new"])
            #expect(list.map { $0.eventJSON == nil } == [true, true, false])
            #expect(list.map { $0.storedAt == 0 } == [true, true, false])
            #expect(
                try await store.unreadNotifications(of: "u-alice", storedAfter: 0, limit: 10).map(\.id) == ["n-new"])
            #expect(
                try await store.userCounts(["u-alice"], policy: .unseen)["u-alice"]
                    == UserCounts(
                        counts: Counts(unreadNotifications: 2, unseenNotifications: 2, unreadMessages: 1), badge: 3,
                        badgeVersion: 3))
            #expect(
                try await store.conversations(of: "u-alice", limit: 10, before: nil).conversations
                    == [
                        ConversationSummary(
                            conversationID: "c-old", unreadMessages: 1, lastMessageAt: at(11).microsecondsSinceEpoch)
                    ])
        }
    }
}
