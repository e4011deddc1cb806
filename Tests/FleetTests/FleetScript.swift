import BadgeCore
import BadgeModel
import BadgeSupport
import BadgeWire

/// A seeded, reproducible event script for fleet tests: users with 1–3 devices each, then a few thousand events of
/// every type (notifications, chat, reads, watermarks, preferences, self-actions, duplicate publishes, a few
/// unregistrations), with some timestamps out of order so that watermarks cover later arrivals.
struct FleetScript {
    struct Step {
        var event: Event
        /// The same event published again (a duplicate publish).
        var isDuplicate: Bool
    }

    private(set) var steps: [Step] = []
    let users: [String]

    private var rng: SeededGenerator

    /// `userPrefix` names the users (`PREFIX-u0`, …): scripts with different prefixes touch disjoint users.
    init(seed: UInt64, users userCount: Int = 40, events: Int = 2500, userPrefix: String = "fleet") {
        rng = SeededGenerator(seed: seed)
        users = (0..<userCount).map { "\(userPrefix)-u\($0)" }
        var clock: Int64 = 1_795_000_000_000_000
        var notifications: [String: [String]] = [:]
        var tokens: [String: [String]] = [:]
        var sequence = 0

        func nextID() -> String {
            sequence += 1
            return "f\(seed)-\(sequence)"
        }
        func time(jitter: Bool = true) -> Timestamp {
            clock += 1_000_000
            let back = jitter && rng.next(100) < 10 ? Int64(rng.next(30)) * 1_000_000 : 0
            return Timestamp(microsecondsSinceEpoch: clock - back)
        }

        for user in users {
            for device in 0..<(1 + rng.next(3)) {
                let token = "fleet-\(seed)-\(user)-\(device)"
                tokens[user, default: []].append(token)
                steps.append(
                    Step(
                        event: Event(
                            id: nextID(), type: .deviceRegistered, recipient: user, occurredAt: time(jitter: false),
                            device: DeviceInfo(
                                token: token, provider: rng.next(4) == 0 ? .fcm : .apns, topic: "com.example.fleet")),
                        isDuplicate: false))
            }
        }

        let notificationTypes: [EventType] = [
            .follow, .amen, .comment, .mention, .followRequestAccepted, .messageRequestAccepted, .prayerReminder,
        ]
        while steps.count < events {
            let user = users[rng.next(users.count)]
            let actorIndex = rng.next(users.count)
            var actor = EventActor(id: users[actorIndex], name: "User \(actorIndex)")
            if rng.next(100) < 3 { actor = EventActor(id: user, name: "Self") }  // self-action: no effect
            if actor.id == user, rng.next(100) >= 3 { continue }
            let roll = rng.next(100)
            let id = nextID()
            let event: Event
            switch roll {
            case 0..<45:
                let type = notificationTypes[rng.next(notificationTypes.count)]
                event = Event(
                    id: id, type: type, recipient: user, occurredAt: time(),
                    actor: type == .prayerReminder ? nil : actor,
                    postID: "post-\(rng.next(20))", conversationID: "conv-\(rng.next(4))",
                    text: "text \(sequence) 🙏")
                notifications[user, default: []].append(id)
            case 45..<65:
                event = Event(
                    id: id, type: .message, recipient: user, occurredAt: time(), actor: actor,
                    conversationID: "conv-\(rng.next(4))", text: "message \(sequence)")
            case 65..<71:
                event = Event(
                    id: id, type: .conversationRead, recipient: user, occurredAt: time(),
                    conversationID: "conv-\(rng.next(4))")
            case 71..<79:
                var ids = Array((notifications[user] ?? []).suffix(6).filter { _ in rng.next(2) == 0 })
                ids.append("f\(seed)-\(sequence + 3)")  // often a notification not published yet: a tombstone
                event = Event(
                    id: id, type: .notificationRead, recipient: user, occurredAt: time(), notificationIDs: ids)
            case 79..<84:
                event = Event(id: id, type: .notificationsReadAll, recipient: user, occurredAt: time())
            case 84..<91:
                event = Event(id: id, type: .notificationsOpened, recipient: user, occurredAt: time())
            case 91..<95:
                event = Event(
                    id: id, type: .preferencesUpdated, recipient: user, occurredAt: time(),
                    preferences: PreferencesChange(badgeEnabled: rng.next(3) != 0, previews: rng.next(2) == 0))
            case 95..<96:
                guard let token = tokens[user]?.popLast(), !(tokens[user]?.isEmpty ?? true) else { continue }
                event = Event(
                    id: id, type: .deviceUnregistered, recipient: user, occurredAt: time(),
                    device: DeviceInfo(token: token))
            default:
                // A duplicate publish of an earlier event of this user.
                guard let earlier = steps.last(where: { $0.event.recipient == user && !$0.isDuplicate }) else {
                    continue
                }
                steps.append(Step(event: earlier.event, isDuplicate: true))
                continue
            }
            steps.append(Step(event: event, isDuplicate: false))
        }
    }
}
