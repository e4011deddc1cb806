import BadgeCore
import BadgeSupport
import BadgeWire

/// A reproducible stream of events for load tests: each user first registers one device, then a mix of
/// notifications (follow, amen, comment, mention), chat messages and read-state events.
///
/// A user's device token depends on the user alone (`load-u7` always registers the same token), so a second load
/// over the same users, such as `scripts/bench`'s live run after its backlog, registers the devices they already
/// have and costs per event what the first did; a token that changed with every run would give each user one
/// more device per run, and each run more pushes per event than the one before.
struct LoadGenerator {
    private var random: SeededGenerator
    private let users: Int
    private var registered = 0
    private var sequence = 0
    private let runID: UInt64
    /// The second half of every load token ("badgepip" in ASCII).
    private static let tokenSuffix: UInt64 = 0x6261_6467_6570_6970
    /// Every event after the registrations is a follow of `load-u0` by a follower of its own.
    private let celebrity: Bool

    init(users: Int, seed: UInt64, celebrity: Bool = false) {
        self.users = users
        self.celebrity = celebrity
        // Offset by one step, as this generator always was: the same seed gives the same load as before.
        self.random = SeededGenerator(seed: seed &+ 0x9E37_79B9_7F4A_7C15)
        self.runID = UInt64.random(in: 0...UInt64.max) >> 16
    }

    private mutating func pick(_ count: Int) -> Int { random.next(count) }

    mutating func next() -> OutgoingEvent {
        sequence += 1
        let id = "load-\(runID)-\(sequence)"
        let now = Timestamp.now()
        if registered < users {
            let user = "load-u\(registered)"
            registered += 1
            let token = String(format16(UInt64(registered)) + format16(Self.tokenSuffix))
            return OutgoingEvent(
                event: Event(
                    id: id, type: .deviceRegistered, recipient: user, occurredAt: now,
                    device: DeviceInfo(token: token, provider: registered % 4 == 0 ? .fcm : .apns)))
        }
        if celebrity {
            let fan = EventActor(id: "fan-\(sequence)", name: "Fan \(sequence)")
            return OutgoingEvent(event: Event(id: id, type: .follow, recipient: "load-u0", occurredAt: now, actor: fan))
        }
        let user = "load-u\(pick(users))"
        var actorIndex = pick(users)
        if "load-u\(actorIndex)" == user { actorIndex = (actorIndex + 1) % max(users, 2) }
        let actor = EventActor(id: "load-u\(actorIndex)", name: "User \(actorIndex)")
        let roll = pick(100)
        let event: Event
        switch roll {
        case 0..<25: event = Event(id: id, type: .follow, recipient: user, occurredAt: now, actor: actor)
        case 25..<45:
            event = Event(id: id, type: .amen, recipient: user, occurredAt: now, actor: actor, postID: "p\(pick(50))")
        case 45..<60:
            event = Event(
                id: id, type: .comment, recipient: user, occurredAt: now, actor: actor, postID: "p\(pick(50))",
                text: "Comment \(sequence)")
        case 60..<65:
            event = Event(id: id, type: .mention, recipient: user, occurredAt: now, actor: actor, postID: "p1")
        case 65..<85:
            event = Event(
                id: id, type: .message, recipient: user, occurredAt: now, actor: actor,
                conversationID: "c\(pick(5))", text: "Message \(sequence)")
        case 85..<90:
            event = Event(id: id, type: .notificationsOpened, recipient: user, occurredAt: now)
        case 90..<95:
            event = Event(
                id: id, type: .conversationRead, recipient: user, occurredAt: now, conversationID: "c\(pick(5))")
        default:
            event = Event(id: id, type: .notificationsReadAll, recipient: user, occurredAt: now)
        }
        return OutgoingEvent(event: event)
    }

    private func format16(_ value: UInt64) -> String {
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 16 - hex.count)) + hex
    }
}
