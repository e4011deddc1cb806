import BadgeCore
import BadgeWire
import Testing

@testable import BadgeStore

/// What a notification keeps of its event for the app's list: the event as it is, or a preview of a long one.
@Suite struct ListedJSONTests {
    @Test func aShortEventIsKeptWholeALongOneAsAPreview() throws {
        var event = follow("c-1", at: 1)
        event.type = .comment
        event.postID = "p-1"
        event.text = "short"
        let short = String(decoding: event.jsonData(), as: UTF8.self)
        #expect(EventRules.listedJSON(event, json: short) == short)

        event.text = String(repeating: "\"", count: 20_000)
        let long = String(decoding: event.jsonData(), as: UTF8.self)
        let listed = EventRules.listedJSON(event, json: long)
        #expect(listed.utf8.count < EventRules.listedJSONLimit + 2 * EventRules.listedTextLimit + 64)
        let parsed = try JSONValue.parse(listed)
        #expect(parsed["text"]?.stringValue?.count == EventRules.listedTextLimit)
        #expect(parsed["id"]?.stringValue == "c-1" && parsed["post_id"]?.stringValue == "p-1")
        #expect(parsed["actor"]?["name"] != nil)
    }
}
