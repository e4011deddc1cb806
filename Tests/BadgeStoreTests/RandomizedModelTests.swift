import BadgeCore
import BadgeModel
import BadgeSupport
import BadgeWire
import Testing

@_spi(Testing) @testable import BadgeStore

/// Random valid events over a few users, devices and conversations: every type, duplicates, self-actions,
/// tombstones for ids that arrive later, watermarks older and newer than the notifications they meet, device
/// moves between users, preferences.
struct RandomEvents {
    var rng: SeededGenerator
    var counter = 0
    var emitted: [Event] = []
    var notificationIDs: [String] = []

    static let users = ["u-ann", "u-ben", "u-cat"]
    static let actors = users + ["u-dan", "u-eve"]
    static let tokens = (1...5).map { "tok\($0)-aaaa-bbbb" }
    static let conversations = ["c1", "c2", "c3"]

    init(seed: UInt64) {
        rng = SeededGenerator(seed: seed)
    }

    private mutating func pick<T>(_ values: [T]) -> T {
        values[Int.random(in: 0..<values.count, using: &rng)]
    }

    private mutating func chance(_ percent: Int) -> Bool {
        Int.random(in: 0..<100, using: &rng) < percent
    }

    /// Within a ten-minute window, so watermarks meet both older and newer notifications.
    private mutating func time() -> Timestamp {
        baseTime.adding(microseconds: Int64.random(in: 0..<600_000_000, using: &rng))
    }

    private mutating func actor() -> EventActor {
        let id = pick(Self.actors)
        return EventActor(id: id, name: "Name of \(id)", username: chance(50) ? id : nil)
    }

    private mutating func maybeUntil() -> Timestamp? {
        chance(60) ? time() : nil
    }

    mutating func next() -> Event {
        if !emitted.isEmpty && chance(6) {
            return pick(emitted)
        }
        counter += 1
        let id = "e\(counter)"
        let recipient = pick(Self.users)
        var event = Event(id: id, type: .follow, recipient: recipient, occurredAt: time())
        let roll = Int.random(in: 0..<100, using: &rng)
        switch roll {
        case 0..<36:
            event.type = pick([
                .follow, .amen, .comment, .mention, .followRequestAccepted, .messageRequestAccepted, .prayerReminder,
            ])
            if event.type != .prayerReminder { event.actor = actor() }
            if [.amen, .comment, .mention].contains(event.type) { event.postID = "post-\(counter % 7)" }
            if event.type == .comment || (event.type == .mention && chance(50)) { event.text = "text \(counter)" }
            if event.type == .comment && chance(50) { event.commentID = "cm-\(counter)" }
            if event.type == .messageRequestAccepted { event.conversationID = pick(Self.conversations) }
            if event.type == .prayerReminder && chance(50) {
                event.title = "Pray"
                event.text = "for a while"
            }
            notificationIDs.append(id)
        case 36..<56:
            event.type = .message
            event.actor = actor()
            event.conversationID = pick(Self.conversations)
            if chance(70) { event.text = "hello \(counter)" }
            if chance(50) { event.messageID = "m-\(counter)" }
        case 56..<63:
            event.type = .conversationRead
            event.conversationID = pick(Self.conversations)
            event.until = maybeUntil()
        case 63..<72:
            event.type = .notificationRead
            var ids: [String] = []
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                if !notificationIDs.isEmpty && chance(50) {
                    ids.append(pick(notificationIDs))
                } else if chance(80) {
                    ids.append("e\(counter + Int.random(in: 1...25, using: &rng))")  // may arrive later
                } else {
                    ids.append("nope-\(Int.random(in: 0..<5, using: &rng))")
                }
            }
            event.notificationIDs = ids
        case 72..<76:
            event.type = .notificationsReadAll
            event.until = maybeUntil()
        case 76..<82:
            event.type = .notificationsOpened
            event.until = maybeUntil()
        case 82..<91:
            event.type = .deviceRegistered
            event.device = DeviceInfo(
                token: pick(Self.tokens), provider: pick([.apns, .fcm]),
                topic: chance(50) ? "com.example.app" : nil, environment: pick([nil, .production, .sandbox]))
        case 91..<95:
            event.type = .deviceUnregistered
            event.device = DeviceInfo(token: pick(Self.tokens))
        default:
            event.type = .preferencesUpdated
            let badgeEnabled: Bool? = chance(70) ? chance(60) : nil
            let previews: Bool? = badgeEnabled == nil || chance(40) ? chance(50) : nil
            event.preferences = PreferencesChange(badgeEnabled: badgeEnabled, previews: previews)
        }
        emitted.append(event)
        return event
    }
}

@Suite("Store vs InboxModel")
struct RandomizedModelTests {
    @Test func generatedEventsAreValid() throws {
        var generator = RandomEvents(seed: 99)
        for _ in 0..<2000 {
            let event = generator.next()
            let decoded = try EventDecoder.decode(body: event.jsonData(), contentType: nil).get()
            #expect(decoded == event)
        }
    }

    /// ~300 random events per seed in random batch sizes; after every batch the outbox holds exactly the
    /// model's pushes (same order and fields) and every user's counts, badge and version equal the model's.
    @Test(arguments: Backend.allCases, 1...30)
    func matchesModel(backend: Backend, seed: Int) async throws {
        try await withStore(backend) { store in
            var generator = RandomEvents(seed: UInt64(seed))
            var rng = SeededGenerator(seed: UInt64(seed) &* 7919)
            let policy: BadgePolicy = seed % 3 == 0 ? .unread : .unseen
            // Every fourth seed caps devices per user at 2, so that registrations drop the oldest device.
            let cap = seed % 4 == 0 ? 2 : ApplyContext.defaultMaxDevicesPerUser
            var model = InboxModel(policy: policy, maxDevicesPerUser: cap)
            var lastID: Int64 = 0
            var total = 0
            var batchNumber = 0
            var alerts = 0
            var badgeOnly = 0
            var duplicates = 0
            while total < 300 {
                let size = Int.random(in: 1...30, using: &rng)
                let batch = (0..<size).map { _ in generator.next() }
                total += size
                batchNumber += 1
                let context = "seed \(seed) batch \(batchNumber)"

                let applied = try await store.apply(
                    batch, policy: policy, context: ApplyContext(maxDevicesPerUser: cap))
                let outcomes = batch.map { model.apply($0) }
                try #require(applied.count == batch.count)
                for (result, outcome) in zip(applied, outcomes) {
                    #expect(result.duplicate == outcome.isDuplicate, "\(context): \(result.event.id)")
                    #expect(result.pushes.map(\.push) == outcome.pushes, "\(context): \(result.event.id)")
                }
                let planned = applied.flatMap(\.pushes)
                alerts += planned.count(where: { $0.push.kind.isAlert })
                badgeOnly += planned.count(where: { !$0.push.kind.isAlert })
                duplicates += applied.count(where: \.duplicate)
                for push in planned {
                    #expect(push.id > lastID, "\(context): outbox ids increase")
                    lastID = push.id
                }
                // The outbox rebuilds the same pushes (alerts decode their event back).
                let outbox = try await store.pendingPushes(limit: 100_000)
                #expect(outbox == planned, "\(context): outbox")
                try await store.recordDeliveries(DeliveryRecord(sent: outbox.map(\.id)))

                for user in RandomEvents.users {
                    expectMatches(try await store.snapshot(user: user), model, context)
                }
            }
            // The run exercised alerts, badge-only pushes and duplicates.
            #expect(alerts > 20 && badgeOnly > 10 && duplicates > 5, "\(alerts) \(badgeOnly) \(duplicates)")
        }
    }
}
