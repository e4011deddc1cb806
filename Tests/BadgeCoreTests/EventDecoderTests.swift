import BadgeWire
import Foundation
import Testing

@testable import BadgeCore

/// `{"id":"e-1","recipient":"u-alice","occurred_at":…,<fields>}`.
private func eventJSON(_ fields: String) -> String {
    #"{"id":"e-1","recipient":"u-alice","occurred_at":"2026-11-21T10:00:00Z","# + fields + "}"
}

private let actorJSON = #""actor":{"id":"u-bob","name":"Bob"}"#
private let longID = String(repeating: "x", count: 129)

private func decode(_ text: String, contentType: String? = "application/json") -> Result<Event, InvalidEvent> {
    EventDecoder.decode(body: Array(text.utf8), contentType: contentType)
}

struct InvalidCase: Sendable, CustomTestStringConvertible {
    let label: String
    let body: [UInt8]
    let contentType: String?
    let code: String
    let message: String?

    init(_ label: String, _ body: String, _ code: String, _ message: String? = nil, contentType: String? = nil) {
        self.init(label, Array(body.utf8), code, message, contentType: contentType)
    }

    init(_ label: String, _ body: [UInt8], _ code: String, _ message: String? = nil, contentType: String? = nil) {
        self.label = label
        self.body = body
        self.contentType = contentType
        self.code = code
        self.message = message
    }

    var testDescription: String { label }
}

private let invalidCases: [InvalidCase] = [
    // Transport and syntax.
    InvalidCase(
        "too large", eventJSON(#""type":"follow",\#(actorJSON),"pad":""#) + String(repeating: " ", count: 70_000),
        "too_large"),
    InvalidCase(
        "bad content type", eventJSON(#""type":"follow",\#(actorJSON)"#), "bad_content_type",
        #"content type "text/plain" is not application/json"#, contentType: "text/plain"),
    InvalidCase(
        "json with parameters of another type", eventJSON(#""type":"follow",\#(actorJSON)"#), "bad_content_type",
        contentType: "application/jsonx; charset=utf-8"),
    InvalidCase(
        "invalid UTF-8", Array(#"{"id":"e-1","type":"#.utf8) + [0xFF] + Array(#""}"#.utf8), "bad_encoding",
        "body is not valid UTF-8 (byte 19)"),
    InvalidCase(
        "encoded surrogate", [0x22, 0xED, 0xA0, 0x80, 0x22], "bad_encoding", "body is not valid UTF-8 (byte 1)"),
    InvalidCase("not JSON", "hello", "invalid_json", #"body is not JSON: unexpected "h" at byte 0"#),
    InvalidCase("empty body", "", "invalid_json", "body is not JSON: unexpected end of input at byte 0"),
    InvalidCase("trailing garbage", eventJSON(#""type":"follow",\#(actorJSON)"#) + "x", "invalid_json"),
    InvalidCase("duplicate keys", eventJSON(#""type":"follow","type":"amen",\#(actorJSON)"#), "invalid_json"),
    InvalidCase("array", "[1,2]", "invalid_json", "body is an array, not a JSON object"),
    InvalidCase("string", "\"follow\"", "invalid_json", "body is a string, not a JSON object"),
    InvalidCase(
        "too deep",
        eventJSON(
            #""type":"follow",\#(actorJSON),"x":"# + String(repeating: "[", count: 64)
                + String(repeating: "]", count: 64)), "invalid_json"),
    // Base fields.
    InvalidCase("unknown type", eventJSON(#""type":"like""#), "unknown_type", #"unknown type "like""#),
    InvalidCase("type with a newline", eventJSON(#""type":"a\nb""#), "unknown_type", #"unknown type "a\nb""#),
    InvalidCase(
        "type not a string", eventJSON(#""type":3"#), "invalid_field", #"field "type" must be a string, not a number"#),
    InvalidCase(
        "missing id", #"{"type":"follow","recipient":"u","occurred_at":"2026-11-21T10:00:00Z"}"#, "missing_field",
        #"field "id" is required"#),
    InvalidCase("missing type", eventJSON(actorJSON), "missing_field", #"field "type" is required"#),
    InvalidCase(
        "missing recipient", #"{"id":"e","type":"follow","occurred_at":"2026-11-21T10:00:00Z"}"#, "missing_field",
        #"field "recipient" is required"#),
    InvalidCase(
        "missing occurred_at", #"{"id":"e","type":"follow","recipient":"u"}"#, "missing_field",
        #"field "occurred_at" is required"#),
    InvalidCase(
        "id with a space",
        #"{"id":"e 1","type":"prayer_reminder","recipient":"u","occurred_at":"2026-11-21T10:00:00Z"}"#,
        "invalid_field", #"field "id" must be 1-128 chars of [A-Za-z0-9._:-]"#),
    InvalidCase(
        "empty id", #"{"id":"","type":"prayer_reminder","recipient":"u","occurred_at":"2026-11-21T10:00:00Z"}"#,
        "invalid_field"),
    InvalidCase(
        "id of 129 chars",
        #"{"id":"\#(longID)","type":"prayer_reminder","recipient":"u","occurred_at":"2026-11-21T10:00:00Z"}"#,
        "invalid_field"),
    InvalidCase(
        "id with @", #"{"id":"e@1","type":"prayer_reminder","recipient":"u","occurred_at":"2026-11-21T10:00:00Z"}"#,
        "invalid_field"),
    InvalidCase(
        "id not a string", #"{"id":1,"type":"prayer_reminder","recipient":"u","occurred_at":"2026-11-21T10:00:00Z"}"#,
        "invalid_field", #"field "id" must be a string, not a number"#),
    InvalidCase(
        "recipient with a slash",
        #"{"id":"e","type":"prayer_reminder","recipient":"u/1","occurred_at":"2026-11-21T10:00:00Z"}"#,
        "invalid_field", #"field "recipient" must be 1-128 chars of [A-Za-z0-9._:@-]"#),
    InvalidCase(
        "recipient non-ASCII",
        #"{"id":"e","type":"prayer_reminder","recipient":"ü","occurred_at":"2026-11-21T10:00:00Z"}"#,
        "invalid_field"),
    InvalidCase(
        "bad occurred_at", #"{"id":"e","type":"prayer_reminder","recipient":"u","occurred_at":"yesterday"}"#,
        "invalid_field", #"field "occurred_at" is not an RFC 3339 timestamp"#),
    InvalidCase(
        "occurred_at on Feb 30",
        #"{"id":"e","type":"prayer_reminder","recipient":"u","occurred_at":"2026-02-30T00:00:00Z"}"#,
        "invalid_field"),
    InvalidCase(
        "occurred_at without offset",
        #"{"id":"e","type":"prayer_reminder","recipient":"u","occurred_at":"2026-11-21T10:00:00"}"#, "invalid_field"),
    InvalidCase(
        "bad until", eventJSON(#""type":"notifications_read_all","until":"2026-11-21T25:00:00Z""#), "invalid_field",
        #"field "until" is not an RFC 3339 timestamp"#),
    // Required fields per type.
    InvalidCase(
        "follow without actor", eventJSON(#""type":"follow""#), "missing_field",
        #"field "actor" is required for type "follow""#),
    InvalidCase(
        "amen without actor", eventJSON(#""type":"amen","post_id":"p""#), "missing_field",
        #"field "actor" is required for type "amen""#),
    InvalidCase(
        "amen without post_id", eventJSON(#""type":"amen",\#(actorJSON)"#), "missing_field",
        #"field "post_id" is required for type "amen""#),
    InvalidCase(
        "comment without post_id", eventJSON(#""type":"comment",\#(actorJSON),"text":"t""#), "missing_field",
        #"field "post_id" is required for type "comment""#),
    InvalidCase(
        "comment without text", eventJSON(#""type":"comment",\#(actorJSON),"post_id":"p""#), "missing_field",
        #"field "text" is required for type "comment""#),
    InvalidCase(
        "mention without post_id", eventJSON(#""type":"mention",\#(actorJSON)"#), "missing_field",
        #"field "post_id" is required for type "mention""#),
    InvalidCase("mention without actor", eventJSON(#""type":"mention","post_id":"p""#), "missing_field"),
    InvalidCase(
        "follow_request_accepted without actor", eventJSON(#""type":"follow_request_accepted""#),
        "missing_field", #"field "actor" is required for type "follow_request_accepted""#),
    InvalidCase(
        "message_request_accepted without conversation_id",
        eventJSON(#""type":"message_request_accepted",\#(actorJSON)"#), "missing_field",
        #"field "conversation_id" is required for type "message_request_accepted""#),
    InvalidCase(
        "message_request_accepted without actor",
        eventJSON(#""type":"message_request_accepted","conversation_id":"c""#), "missing_field"),
    InvalidCase(
        "message without conversation_id", eventJSON(#""type":"message",\#(actorJSON)"#), "missing_field",
        #"field "conversation_id" is required for type "message""#),
    InvalidCase(
        "message without actor", eventJSON(#""type":"message","conversation_id":"c""#), "missing_field",
        #"field "actor" is required for type "message""#),
    InvalidCase(
        "conversation_read without conversation_id", eventJSON(#""type":"conversation_read""#),
        "missing_field", #"field "conversation_id" is required for type "conversation_read""#),
    InvalidCase(
        "notification_read without ids", eventJSON(#""type":"notification_read""#), "missing_field",
        #"field "notification_ids" is required for type "notification_read""#),
    InvalidCase(
        "device_registered without device", eventJSON(#""type":"device_registered""#), "missing_field",
        #"field "device" is required for type "device_registered""#),
    InvalidCase(
        "device_registered without provider",
        eventJSON(#""type":"device_registered","device":{"token":"abcdefgh12"}"#), "missing_field",
        #"field "device.provider" is required for type "device_registered""#),
    InvalidCase(
        "device_unregistered without device", eventJSON(#""type":"device_unregistered""#), "missing_field",
        #"field "device" is required for type "device_unregistered""#),
    InvalidCase(
        "device without token", eventJSON(#""type":"device_unregistered","device":{}"#), "missing_field",
        #"field "device.token" is required"#),
    InvalidCase(
        "preferences_updated without preferences", eventJSON(#""type":"preferences_updated""#),
        "missing_field", #"field "preferences" is required for type "preferences_updated""#),
    // Nested objects, patterns, lengths and types.
    InvalidCase(
        "actor not an object", eventJSON(#""type":"follow","actor":"bob""#), "invalid_field",
        #"field "actor" must be an object, not a string"#),
    InvalidCase(
        "actor without name", eventJSON(#""type":"follow","actor":{"id":"u-bob"}"#), "missing_field",
        #"field "actor.name" is required"#),
    InvalidCase(
        "actor without id", eventJSON(#""type":"follow","actor":{"name":"Bob"}"#), "missing_field",
        #"field "actor.id" is required"#),
    InvalidCase(
        "actor with a bad id", eventJSON(#""type":"follow","actor":{"id":"u bob","name":"Bob"}"#),
        "invalid_field", #"field "actor.id" must be 1-128 chars of [A-Za-z0-9._:@-]"#),
    InvalidCase(
        "actor with an empty name", eventJSON(#""type":"follow","actor":{"id":"u","name":""}"#),
        "invalid_field", #"field "actor.name" must be 1-200 characters"#),
    InvalidCase(
        "actor name of 201 characters",
        eventJSON(#""type":"follow","actor":{"id":"u","name":"\#(String(repeating: "é", count: 201))"}"#),
        "invalid_field", #"field "actor.name" must be 1-200 characters"#),
    InvalidCase(
        "actor username of 201 characters",
        eventJSON(
            #""type":"follow","actor":{"id":"u","name":"B","username":"\#(String(repeating: "b", count: 201))"}"#),
        "invalid_field", #"field "actor.username" must be at most 200 characters, not 201"#),
    InvalidCase(
        "actor name null", eventJSON(#""type":"follow","actor":{"id":"u","name":null}"#), "invalid_field",
        #"field "actor.name" must be a string, not null"#),
    InvalidCase(
        "post_id with a slash", eventJSON(#""type":"amen",\#(actorJSON),"post_id":"p/1""#), "invalid_field",
        #"field "post_id" must be 1-128 chars of [A-Za-z0-9._:-]"#),
    InvalidCase(
        "comment_id empty", eventJSON(#""type":"comment",\#(actorJSON),"post_id":"p","text":"t","comment_id":"""#),
        "invalid_field", #"field "comment_id" must be 1-128 chars of [A-Za-z0-9._:-]"#),
    InvalidCase(
        "conversation_id too long", eventJSON(#""type":"conversation_read","conversation_id":"\#(longID)""#),
        "invalid_field"),
    InvalidCase(
        "message_id with @", eventJSON(#""type":"message",\#(actorJSON),"conversation_id":"c","message_id":"m@""#),
        "invalid_field"),
    InvalidCase(
        "text of 20001 characters",
        eventJSON(#""type":"comment",\#(actorJSON),"post_id":"p","text":"\#(String(repeating: "é", count: 20_001))""#),
        "invalid_field", #"field "text" must be at most 20000 characters, not 20001"#),
    InvalidCase(
        "text null", eventJSON(#""type":"comment",\#(actorJSON),"post_id":"p","text":null"#), "invalid_field",
        #"field "text" must be a string, not null"#),
    InvalidCase(
        "title of 1001 characters",
        eventJSON(#""type":"prayer_reminder","title":"\#(String(repeating: "t", count: 1001))""#), "invalid_field",
        #"field "title" must be at most 1000 characters, not 1001"#),
    InvalidCase(
        "notification_ids empty", eventJSON(#""type":"notification_read","notification_ids":[]"#),
        "invalid_field", #"field "notification_ids" must hold 1-500 ids, not 0"#),
    InvalidCase(
        "501 notification_ids",
        eventJSON(
            #""type":"notification_read","notification_ids":["#
                + Array(repeating: "\"n\"", count: 501)
                .joined(separator: ",") + "]"), "invalid_field",
        #"field "notification_ids" must hold 1-500 ids, not 501"#),
    InvalidCase(
        "notification_ids not an array", eventJSON(#""type":"notification_read","notification_ids":"n1""#),
        "invalid_field", #"field "notification_ids" must be an array, not a string"#),
    InvalidCase(
        "notification_ids with a bad id",
        eventJSON(#""type":"notification_read","notification_ids":["n1","n 2"]"#), "invalid_field",
        #"field "notification_ids[1]" must be 1-128 chars of [A-Za-z0-9._:-]"#),
    InvalidCase(
        "notification_ids with a number", eventJSON(#""type":"notification_read","notification_ids":[1]"#),
        "invalid_field", #"field "notification_ids[0]" must be a string, not a number"#),
    InvalidCase(
        "token of 7 chars",
        eventJSON(#""type":"device_registered","device":{"token":"abcdefg","provider":"apns"}"#), "invalid_field",
        #"field "device.token" must be 8-4096 chars of [A-Za-z0-9_:.-]"#),
    InvalidCase(
        "token with a slash",
        eventJSON(#""type":"device_registered","device":{"token":"abcdefgh/1","provider":"apns"}"#), "invalid_field"),
    InvalidCase(
        "token of 4097 chars",
        eventJSON(#""type":"device_unregistered","device":{"token":"\#(String(repeating: "a", count: 4097))"}"#),
        "invalid_field"),
    InvalidCase(
        "token of 2049 chars (valid by the schema, longer than the database index takes)",
        eventJSON(
            #""type":"device_registered","device":{"token":"\#(String(repeating: "a", count: 2049))","provider":"apns"}"#
        ),
        "invalid_field",
        #"field "device.token" must be at most 2048 chars (the database indexes tokens), not 2049"#),
    InvalidCase(
        "topic with a newline (valid by the schema, refused as a header value)",
        eventJSON(
            #""type":"device_registered","device":{"token":"abcdefgh12","provider":"apns","topic":"com.x\r\nx: y"}"#),
        "invalid_field", #"field "device.topic" must be 1-255 chars of [A-Za-z0-9.-] (a bundle id)"#),
    InvalidCase(
        "topic with a NUL (valid by the schema, refused by PostgreSQL text)",
        eventJSON(
            #""type":"device_registered","device":{"token":"abcdefgh12","provider":"apns","topic":"com.x\u0000"}"#),
        "invalid_field", #"field "device.topic" must be 1-255 chars of [A-Za-z0-9.-] (a bundle id)"#),
    InvalidCase(
        "topic with non-ASCII letters",
        eventJSON(
            #""type":"device_registered","device":{"token":"abcdefgh12","provider":"apns","topic":"com.exämple"}"#),
        "invalid_field", #"field "device.topic" must be 1-255 chars of [A-Za-z0-9.-] (a bundle id)"#),
    InvalidCase(
        "empty topic",
        eventJSON(#""type":"device_registered","device":{"token":"abcdefgh12","provider":"apns","topic":""}"#),
        "invalid_field", #"field "device.topic" must be 1-255 chars of [A-Za-z0-9.-] (a bundle id)"#),
    InvalidCase(
        "unknown provider",
        eventJSON(#""type":"device_registered","device":{"token":"abcdefgh12","provider":"gcm"}"#), "invalid_field",
        #"field "device.provider" must be "apns" or "fcm""#),
    InvalidCase(
        "unknown environment",
        eventJSON(#""type":"device_registered","device":{"token":"abcdefgh12","provider":"apns","environment":"dev"}"#),
        "invalid_field", #"field "device.environment" must be "production" or "sandbox""#),
    InvalidCase(
        "app of 65 characters",
        eventJSON(
            #""type":"device_registered","device":{"token":"abcdefgh12","provider":"apns","app":""#
                + String(repeating: "a", count: 65) + #""}"#),
        "invalid_field", #"field "device.app" must be 1-64 chars of [A-Za-z0-9._-]"#),
    InvalidCase(
        "app with a slash",
        eventJSON(#""type":"device_registered","device":{"token":"abcdefgh12","provider":"fcm","app":"a/b"}"#),
        "invalid_field", #"field "device.app" must be 1-64 chars of [A-Za-z0-9._-]"#),
    InvalidCase(
        "empty app",
        eventJSON(#""type":"device_registered","device":{"token":"abcdefgh12","provider":"fcm","app":""}"#),
        "invalid_field", #"field "device.app" must be 1-64 chars of [A-Za-z0-9._-]"#),
    InvalidCase(
        "app not a string",
        eventJSON(#""type":"device_registered","device":{"token":"abcdefgh12","provider":"fcm","app":7}"#),
        "invalid_field"),
    InvalidCase(
        "topic of 256 characters",
        eventJSON(
            #""type":"device_registered","device":{"token":"abcdefgh12","provider":"apns","topic":""#
                + String(repeating: "t", count: 256) + #""}"#),
        "invalid_field", #"field "device.topic" must be at most 255 characters, not 256"#),
    InvalidCase(
        "device not an object", eventJSON(#""type":"device_unregistered","device":["abcdefgh12"]"#),
        "invalid_field", #"field "device" must be an object, not an array"#),
    InvalidCase(
        "empty preferences", eventJSON(#""type":"preferences_updated","preferences":{}"#), "invalid_field",
        #"field "preferences" must have at least one of "badge_enabled", "previews""#),
    InvalidCase(
        "unknown preference", eventJSON(#""type":"preferences_updated","preferences":{"previews":true,"sound":true}"#),
        "invalid_field", #"field "preferences" has unknown property "sound""#),
    InvalidCase(
        "preference not a boolean",
        eventJSON(#""type":"preferences_updated","preferences":{"badge_enabled":"no"}"#), "invalid_field",
        #"field "preferences.badge_enabled" must be a boolean, not a string"#),
]

@Suite("Event decoding")
struct EventDecoderTests {
    @Test(arguments: Fixtures.names(in: "examples"))
    func exampleDecodes(name: String) throws {
        let body = try Fixtures.bytes(name, in: "examples")
        let event = try EventDecoder.decode(body: body, contentType: "application/json").get()
        #expect(event.type.rawValue == name)
        let again = try EventDecoder.decode(body: event.jsonData(), contentType: nil).get()
        #expect(again == event)
        // The re-serialised form matches the fixture as JSON (timestamps there are already UTC `Z` form).
        #expect(event.jsonObject() == (try JSONValue.parse(body)))
    }

    @Test func allFifteenExamplesArePresent() {
        #expect(Fixtures.names(in: "examples").sorted() == EventType.allCases.map(\.rawValue).sorted())
    }

    @Test func decodesTheCommentExampleFieldByField() throws {
        let event = try EventDecoder.decode(body: try Fixtures.bytes("comment", in: "examples"), contentType: nil).get()
        #expect(event.id == "evt-comment-1")
        #expect(event.type == .comment)
        #expect(event.recipient == "u-alice")
        #expect(event.occurredAt == Timestamp.parse("2026-11-21T10:00:02Z"))
        #expect(event.actor == EventActor(id: "u-carol", name: "Carol Ng"))
        #expect(event.postID == "post-42")
        #expect(event.commentID == "c-7")
        #expect(event.text == "Great post! 🙏")
        #expect(!event.isSelfAction)
        #expect(event.effectiveUntil == event.occurredAt)
    }

    @Test func decodesDevicesAndPreferences() throws {
        let registered = try EventDecoder.decode(
            body: try Fixtures.bytes("device_registered", in: "examples"), contentType: nil
        ).get()
        #expect(
            registered.device
                == DeviceInfo(
                    token: "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90", provider: .apns,
                    topic: "com.example.amen", environment: .production))
        // v1.1: the device's app, optional (the v1 example above has none).
        let withApp = try EventDecoder.decode(
            body: Array(
                eventJSON(
                    #""type":"device_registered","device":{"token":"abcdefgh12","provider":"apns","#
                        + #""app":"Amen_iOS-2.beta"}"#
                ).utf8),
            contentType: nil
        ).get()
        #expect(withApp.device == DeviceInfo(token: "abcdefgh12", provider: .apns, app: "Amen_iOS-2.beta"))
        let preferences = try EventDecoder.decode(
            body: try Fixtures.bytes("preferences_updated", in: "examples"), contentType: nil
        ).get()
        #expect(preferences.preferences == PreferencesChange(badgeEnabled: false, previews: nil))
        let readAll = try EventDecoder.decode(
            body: try Fixtures.bytes("notifications_read_all", in: "examples"), contentType: nil
        ).get()
        #expect(readAll.until == Timestamp.parse("2026-11-21T10:01:02Z"))
    }

    @Test(arguments: invalidCases)
    func rejects(_ invalid: InvalidCase) {
        let result = EventDecoder.decode(body: invalid.body, contentType: invalid.contentType)
        guard case .failure(let error) = result else {
            Issue.record("accepted \(invalid.label)")
            return
        }
        #expect(error.code.rawValue == invalid.code)
        if let message = invalid.message {
            #expect(error.message == message)
        }
        #expect(!error.message.contains("\n"))
        #expect(!error.message.contains("\r"))
    }

    @Test func tooLargeMessageNamesTheSize() {
        let body = [UInt8](repeating: 0x20, count: 70_000)
        #expect(
            EventDecoder.decode(body: body, contentType: nil)
                == .failure(InvalidEvent(code: .tooLarge, message: "body is 70000 bytes, above the 64 KiB limit")))
    }

    @Test func acceptsABodyOfExactly64KiB() throws {
        let base = eventJSON(#""type":"follow",\#(actorJSON)"#)
        let padded = base + String(repeating: " ", count: EventDecoder.maxBodyBytes - base.utf8.count)
        #expect(padded.utf8.count == 65_536)
        #expect(throws: Never.self) { try decode(padded).get() }
        #expect((try? decode(padded + " ").get()) == nil)
    }

    @Test(arguments: [
        nil, "", "application/json", "Application/JSON; charset=utf-8", " application/json ;charset=UTF-8",
    ])
    func acceptsContentType(_ contentType: String?) throws {
        let event = try decode(eventJSON(#""type":"follow",\#(actorJSON)"#), contentType: contentType).get()
        #expect(event.type == .follow)
    }

    @Test func ignoresUnknownTopLevelFields() throws {
        let event = try decode(eventJSON(#""type":"follow",\#(actorJSON),"extra":{"deep":[1,2,3]},"x-y":null"#)).get()
        #expect(
            event
                == Event(
                    id: "e-1", type: .follow, recipient: "u-alice", occurredAt: baseTime,
                    actor: EventActor(id: "u-bob", name: "Bob")))
    }

    @Test func acceptsLimitsAndNonASCIIText() throws {
        let name = String(repeating: "👨‍👩‍👧", count: 40)  // 200 code points, 40 characters
        #expect(name.unicodeScalars.count == 200)
        let event = try decode(
            eventJSON(
                #""type":"comment","actor":{"id":"u.bob@x:1-_","name":"\#(name)"},"post_id":"p","text":"#
                    + "\"" + String(repeating: "é", count: 20_000) + "\"")
        ).get()
        #expect(event.actor?.name == name)
        #expect(event.text?.count == 20_000)
        let recipient = try decode(
            #"{"id":"A-z.0_9:x","type":"prayer_reminder","recipient":"alice@example.com","#
                + #""occurred_at":"2026-11-21t10:00:00.5+01:00"}"#
        ).get()
        #expect(recipient.recipient == "alice@example.com")
        #expect(recipient.occurredAt.rfc3339 == "2026-11-21T09:00:00.500000Z")
    }

    @Test func acceptsEscapedStrings() throws {
        let event = try decode(
            eventJSON(#""type":"message",\#(actorJSON),"conversation_id":"c","text":"a\"b\\c\u00e9\ud83d\ude4f""#)
        )
        .get()
        #expect(event.text == "a\"b\\cé🙏")
        #expect(try decode(String(decoding: event.jsonData(), as: UTF8.self)).get() == event)
    }

    @Test func decodesParsedJSON() throws {
        let value: JSONValue = [
            "id": "e-9", "type": "notification_read", "recipient": "u-alice",
            "occurred_at": "2026-11-21T10:00:00Z", "notification_ids": ["a", "b"],
        ]
        let event = try EventDecoder.decode(json: value).get()
        #expect(event.notificationIDs == ["a", "b"])
        #expect(event.jsonObject() == value)
    }

    @Test func everyEventTypeRoundTripsThroughJSON() throws {
        let full = Event(
            id: "e-1", type: .mention, recipient: "u@x", occurredAt: at(1), actor: bob, postID: "p", commentID: "c",
            conversationID: "conv", messageID: "m", title: "Hello\nthere", text: "👍🏽 \u{0}", until: at(2),
            notificationIDs: ["n1"],
            device: DeviceInfo(token: "tokentoken", provider: .fcm, topic: "t", environment: .sandbox),
            preferences: PreferencesChange(badgeEnabled: true, previews: false))
        #expect(try EventDecoder.decode(body: full.jsonData(), contentType: nil).get() == full)
    }

    @Test func typeHelpers() {
        #expect(EventType.allCases.count == 15)
        #expect(EventType.allCases.filter(\.createsNotification).count == 7)
        #expect(EventType.message.isMessage && !EventType.message.createsNotification)
        #expect(!EventType.conversationRead.isMessage)
        #expect(
            Event(id: "e", type: .follow, recipient: "u", occurredAt: baseTime, actor: EventActor(id: "u", name: "U"))
                .isSelfAction)
        #expect(!Event(id: "e", type: .prayerReminder, recipient: "u", occurredAt: baseTime).isSelfAction)
    }
}
