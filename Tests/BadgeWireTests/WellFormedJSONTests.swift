import Testing

@testable import BadgeWire

/// The parser's validate-only mode, which the sink uses to decide whether a push body is embedded as is
/// (these were the sink's `JSONValidator` tests).
@Suite("Well-formed JSON")
struct WellFormedJSONTests {
    @Test(
        "accepts well-formed JSON texts",
        arguments: [
            "{}", "[]", " {\"a\": [1, -2.5e+3, true, false, null, \"x\\u00e9\\n\"]} ", "0", "\"s\"", "-0.1E2",
            "{\"aps\":{\"badge\":3}}", "\"caf\u{E9} \u{1F600}\"",
        ]
    )
    func accepts(_ text: String) {
        #expect(JSONValue.isWellFormed(Array(text.utf8)))
    }

    @Test(
        "rejects what is not JSON",
        arguments: [
            "", " ", "{", "}", "{\"a\":}", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "1e", "tru", "nul", "\"\\x\"",
            "\"a\nb\"", "{a:1}", "[1] [2]", "NaN", "'s'", "\"\\u12G4\"", "-", "+1",
        ]
    )
    func rejects(_ text: String) {
        #expect(!JSONValue.isWellFormed(Array(text.utf8)))
    }

    @Test("rejects ill-formed UTF-8 and excessive nesting")
    func rejectsBadBytes() {
        #expect(!JSONValue.isWellFormed([0x22, 0xC3, 0x28, 0x22]))
        #expect(!JSONValue.isWellFormed([0x22, 0xED, 0xA0, 0x80, 0x22]))
        #expect(!JSONValue.isWellFormed([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22]))
        #expect(!JSONValue.isWellFormed([0x22, 0xE2, 0x82, 0x22]))
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(!JSONValue.isWellFormed(Array(deep.utf8)))
        let fine = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(JSONValue.isWellFormed(Array(fine.utf8)))
    }
}
