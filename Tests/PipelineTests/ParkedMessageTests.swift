import AMQPClient
import BadgeWire
import BadgeWorker
import Testing

/// What `badgepipe dead` reads from a parked message, which ones its filters take, and what a replay sends: pure
/// logic, on messages built as the worker, an older worker and the broker leave them.
@Suite("Parked messages")
struct ParkedMessageTests {
    static let parkedAt = Timestamp.parse("2026-11-21T10:00:00.250Z")!

    static func follow(id: String = "e-1", type: String = "follow") -> [UInt8] {
        Array(
            #"{"id":"\#(id)","type":"\#(type)","recipient":"u-1","occurred_at":"2026-11-21T09:00:00Z","actor":{"id":"u-2"}}"#
                .utf8)
    }

    /// A message as the worker parks it now.
    static func parked(
        id: String = "e-1", type: String = "follow", reason: String = "unknown_type", at time: Timestamp = parkedAt,
        routingKey: String = "u-1"
    ) -> ParkedMessage {
        let original = AMQPProperties(
            contentType: "application/json", headers: ["x-trace": "t-9", "x-delivery-count": .int64(2)],
            deliveryMode: .persistent, messageID: id)
        let properties = ParkHeaders.stamped(
            original, routingKey: routingKey, reason: reason, error: "\(reason): something", at: time)
        return ParkedMessage(
            position: 1, body: follow(id: id, type: type), properties: properties, exchange: "",
            routingKey: "test.dead")
    }

    // MARK: Reading

    @Test func aMessageTheWorkerParkedNowTellsEverything() {
        let message = Self.parked(type: "like")
        #expect(message.reason == "unknown_type")
        #expect(message.error == "unknown_type: something")
        #expect(message.parkedAt == Self.parkedAt)
        #expect(message.originalRoutingKey == "u-1")
        #expect(message.eventType == "like")
        #expect(message.eventID == "e-1")
        #expect(message.messageID == "e-1")
        #expect(message.deliveryCount == 2)
        #expect(message.properties.headers?[ParkHeaders.parkedAt]?.stringValue == "2026-11-21T10:00:00.250Z")
    }

    /// A message's age for replay counts from the earlier of its event's `occurred_at` and its parked time, and from
    /// whichever of them it has.
    @Test func theAgeCountsFromTheEarlierOfOccurredAndParked() {
        let now = Self.parkedAt.adding(microseconds: 3_600_000_000)
        // The event occurred an hour before it was parked: two hours before now.
        #expect(Self.parked().age(at: now) == .seconds(7200) + .milliseconds(250))
        // Parked before its event says it occurred (a producer's clock ahead): from the parked time.
        let early = Self.parked(at: Timestamp.parse("2026-11-21T08:00:00Z")!)
        #expect(early.age(at: now) == .seconds(3 * 3600) + .milliseconds(250))
        // A body that is not an event: from the parked time alone.
        let junk = ParkedMessage(
            position: 1, body: Array("junk".utf8), properties: Self.parked().properties, exchange: "",
            routingKey: "test.dead")
        #expect(junk.occurredAt == nil)
        #expect(junk.age(at: now) == .seconds(3600))
        // Neither: from the producer's AMQP timestamp; without one, no age (replay has nothing to keep it to).
        let stamped = ParkedMessage(
            position: 1, body: Array("junk".utf8),
            properties: AMQPProperties(timestamp: UInt64(Self.parkedAt.microsecondsSinceEpoch / 1_000_000)),
            exchange: "", routingKey: "test.dead")
        #expect(stamped.age(at: now) == .seconds(3600) + .milliseconds(250))
        let bare = ParkedMessage(
            position: 1, body: Array("junk".utf8), properties: AMQPProperties(), exchange: "", routingKey: "test.dead")
        #expect(bare.age(at: now) == nil)
    }

    @Test func theErrorHeaderIsOneLineOfAtMostAThousandCharacters() {
        let properties = ParkHeaders.stamped(
            AMQPProperties(), routingKey: "u-1", reason: "invalid_json",
            error: "first line\nsecond\r\n" + String(repeating: "x", count: 2000), at: Self.parkedAt)
        let error = properties.headers?[ParkHeaders.error]?.stringValue ?? ""
        #expect(error.count == 1000)
        #expect(error.hasPrefix("first line second x"))
        let oneLine = !error.contains { $0.isNewline }
        #expect(oneLine)
    }

    @Test(
        arguments: [
            (#"unknown_type: unknown type "like""#, "unknown_type"),
            ("invalid_json: expected a value at byte 0", "invalid_json"),
            ("refused by the database: 22021 invalid byte sequence", "refused_by_database"),
            ("Something odd: with a colon", "unclassified"),
            ("no colon at all", "unclassified"),
        ])
    func aMessageAnOlderWorkerParkedIsClassifiedFromItsError(error: String, reason: String) {
        let headers: AMQPTable = [ParkHeaders.error: .string(error), ParkHeaders.originalRoutingKey: "u-7"]
        let message = ParkedMessage(
            position: 4, body: Array("not json".utf8), properties: AMQPProperties(headers: headers), exchange: "",
            routingKey: "test.dead")
        #expect(message.reason == reason)
        #expect(message.parkedAt == nil)
        #expect(message.originalRoutingKey == "u-7")
        #expect(message.eventType == nil)
        #expect(message.displayID == "-")
    }

    @Test func aMessageTheBrokerDeadLetteredIsReadFromXDeath() {
        let death: AMQPTable = [
            "reason": "delivery_limit", "queue": "test.events.3", "time": .timestamp(1_795_000_000),
            "exchange": "test.events", "routing-keys": .array(["u-5"]), "count": .int64(1),
        ]
        let headers: AMQPTable = ["x-death": .array([.table(death)]), "x-first-death-reason": "delivery_limit"]
        let message = ParkedMessage(
            position: 1, body: Self.follow(id: "e-9"), properties: AMQPProperties(headers: headers),
            exchange: "test.dlx", routingKey: "u-5")
        #expect(message.reason == "delivery_limit")
        #expect(message.parkedAt == Timestamp(microsecondsSinceEpoch: 1_795_000_000 * 1_000_000))
        #expect(message.originalRoutingKey == "u-5")
        #expect(message.eventType == "follow")
        #expect(message.displayID == "e-9", "the event id when there is no message id")
        #expect(message.replayProperties.headers == nil)
    }

    @Test func aMessageWithoutAnyHintHasNoRoutingKeyAndIsUnclassified() {
        let message = ParkedMessage(
            position: 1, body: [], properties: AMQPProperties(), exchange: "", routingKey: "test.dead")
        #expect(message.reason == "unclassified")
        #expect(message.originalRoutingKey == nil, "the dead queue's own name is not where the event was going")
        let viaExchange = ParkedMessage(
            position: 1, body: [], properties: AMQPProperties(), exchange: "test.dlx", routingKey: "u-3")
        #expect(viaExchange.originalRoutingKey == "u-3")
    }

    @Test func aReplayPublishesTheProducersPropertiesWithoutWhatParkingAndTheBrokerAdded() {
        var message = Self.parked()
        message.properties.headers?[AMQPProperties.publishTagHeader] = .uint64(7)
        message.properties.headers?["x-death"] = .array([])
        let replayed = message.replayProperties
        #expect(replayed.headers == ["x-trace": "t-9"])
        #expect(replayed.contentType == "application/json")
        #expect(replayed.deliveryMode == .persistent)
        #expect(replayed.messageID == "e-1")
        let bare = ParkHeaders.stamped(
            AMQPProperties(messageID: "m"), routingKey: "u", reason: "too_large", error: "e", at: Self.parkedAt)
        #expect(ParkHeaders.replayProperties(bare).headers == nil)
        #expect(ParkHeaders.replayProperties(bare).messageID == "m")
    }

    // MARK: Filters

    static let messages: [ParkedMessage] = [
        parked(id: "a", type: "like", reason: "unknown_type", at: Timestamp.parse("2026-11-21T08:00:00Z")!),
        parked(id: "b", type: "follow", reason: "refused_by_database", at: Timestamp.parse("2026-11-21T09:00:00Z")!),
        parked(id: "c", type: "like", reason: "unknown_type", at: Timestamp.parse("2026-11-21T10:00:00Z")!),
        parked(id: "d", type: "comment", reason: "missing_field", at: Timestamp.parse("2026-11-21T11:00:00Z")!),
        ParkedMessage(
            position: 5, body: Array("{".utf8),
            properties: AMQPProperties(
                headers: [ParkHeaders.error: "invalid_json: unexpected end", ParkHeaders.originalRoutingKey: "u-1"],
                messageID: "e"),
            exchange: "", routingKey: "test.dead"),
    ]

    static func ids(_ filter: ParkedFilter) -> [String] {
        messages.filter(filter.matches).map(\.displayID)
    }

    @Test func theEmptyFilterTakesEverything() {
        #expect(Self.ids(ParkedFilter()) == ["a", "b", "c", "d", "e"])
    }

    @Test func eachConditionTakesExactlyItsMessages() {
        #expect(Self.ids(ParkedFilter(reasons: ["unknown_type"])) == ["a", "c"])
        #expect(Self.ids(ParkedFilter(reasons: ["unknown_type", "invalid_json"])) == ["a", "c", "e"])
        #expect(Self.ids(ParkedFilter(reasons: ["too_large"])) == [])
        #expect(Self.ids(ParkedFilter(types: ["like"])) == ["a", "c"])
        #expect(Self.ids(ParkedFilter(types: ["follow", "comment"])) == ["b", "d"])
        #expect(Self.ids(ParkedFilter(ids: ["d", "e", "zz"])) == ["d", "e"])
        #expect(Self.ids(ParkedFilter(ids: ["e-1"])) == [], "a message id that no message carries")
    }

    @Test func timeBoundsAreSinceInclusiveAndUntilExclusiveAndSkipUnknownTimes() {
        let nine = Timestamp.parse("2026-11-21T09:00:00Z")!
        let ten = Timestamp.parse("2026-11-21T10:00:00Z")!
        #expect(Self.ids(ParkedFilter(since: nine)) == ["b", "c", "d"])
        #expect(Self.ids(ParkedFilter(until: ten)) == ["a", "b"])
        #expect(Self.ids(ParkedFilter(since: nine, until: ten)) == ["b"])
        #expect(Self.ids(ParkedFilter(since: ten, until: nine)) == [])
        #expect(Self.ids(ParkedFilter(since: Timestamp(microsecondsSinceEpoch: 0))) == ["a", "b", "c", "d"])
    }

    @Test func conditionsCombine() {
        let nine = Timestamp.parse("2026-11-21T09:00:00Z")!
        #expect(Self.ids(ParkedFilter(reasons: ["unknown_type"], types: ["like"], since: nine)) == ["c"])
        #expect(Self.ids(ParkedFilter(reasons: ["unknown_type"], types: ["follow"])) == [])
        #expect(Self.ids(ParkedFilter(types: ["like"], ids: ["a", "b"])) == ["a"])
    }

    @Test(
        arguments: [
            ("2026-11-21T10:00:00Z", "2026-11-21T10:00:00Z"),
            ("2026-11-21T11:30:00+01:00", "2026-11-21T10:30:00Z"),
            ("90s", "2026-11-21T11:58:30Z"),
            ("15m", "2026-11-21T11:45:00Z"),
            ("2h", "2026-11-21T10:00:00Z"),
            ("7d", "2026-11-14T12:00:00Z"),
            ("0s", "2026-11-21T12:00:00Z"),
        ])
    func aTimeIsRFC3339OrAnAgeBeforeNow(text: String, expected: String) {
        let now = Timestamp.parse("2026-11-21T12:00:00Z")!
        #expect(ParkedFilter.time(text, now: now) == Timestamp.parse(expected))
    }

    @Test(arguments: ["", "h", "2x", "-5m", "5 m", "2026-11-21", "yesterday", "99999999999999999d"])
    func anythingElseIsNotATime(text: String) {
        #expect(ParkedFilter.time(text, now: Timestamp.parse("2026-11-21T12:00:00Z")!) == nil)
    }
}
