import Testing

@testable import BadgeWire

@Suite("JSON parser and serializer")
struct JSONValueTests {
    @Test func parsesAllKinds() throws {
        let value = try json(#" { "a" : [1, -2, 3.5, 1e3, -0, true, false, null], "b": {"c": "d\u00e9\n"} } "#)
        let expected: JSONValue = [
            "a": [1, -2, 3.5, .number(1000), 0, true, false, nil],
            "b": ["c": "dé\n"],
        ]
        #expect(value == expected)
        #expect(value["a"]?[2]?.doubleValue == 3.5)
        #expect(value["b"]?["c"]?.stringValue == "dé\n")
    }

    @Test func keepsIntegersExact() throws {
        #expect(try json("9007199254740993") == .int(9_007_199_254_740_993))
        #expect(try json("-9223372036854775808") == .int(Int64.min))
        #expect(try json("9223372036854775808") == .number(9_223_372_036_854_775_808))
        #expect(try json("1.0") == .number(1))
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        let value = try json(#""\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude4f""#)
        #expect(value == .string("\"\\/\u{8}\u{c}\n\r\tAé€🙏"))
    }

    @Test func serializesCompactlyInInsertionOrder() {
        let value: JSONValue = [
            "z": 1, "a": ["x", nil, true], "m": "q\"\\\n\r\t\u{8}\u{c}\u{1}\u{1f}é🙏/", "n": 2.5,
        ]
        #expect(
            value.serializedString()
                == #"{"z":1,"a":["x",null,true],"m":"q\"\\\n\r\t\b\f\u0001\u001Fé🙏/","n":2.5}"#)
    }

    /// Contiguous bytes and any other collection of them are escaped alike, runs and escapes at the start, in the
    /// middle and at the end.
    @Test(arguments: [
        "", "plain", "\"", "\"\"", "a\"b\\c\n", "\u{1}é🙏\u{1f}", "end\\", String(repeating: "\"", count: 500),
    ])
    func stringsAreEscapedTheSameFromAnyCollection(text: String) throws {
        var fromString: [UInt8] = []
        JSONValue.writeString(text, into: &fromString)
        var fromArray: [UInt8] = []
        JSONValue.writeString(utf8: Array(text.utf8), into: &fromArray)
        var fromLazy: [UInt8] = []
        JSONValue.writeString(utf8: text.utf8.lazy.map { $0 }, into: &fromLazy)
        #expect(fromArray == fromString)
        #expect(fromLazy == fromString)
        #expect(try JSONValue.parse(fromString) == .string(text))
    }

    @Test(arguments: [
        #"{"a":[1,2,{"b":null}],"c":"\u0000 \u001f ☃ 👨‍👩‍👧‍👦","d":-12.5e-3,"e":{}}"#,
        "[]", "\"\"", "0", "-1", "true", "null", "1e+300", "[[[[[]]]]]",
    ])
    func roundTrips(text: String) throws {
        let value = try json(text)
        let again = try JSONValue.parse(value.serialized())
        #expect(again == value)
        #expect(again.serialized() == value.serialized())
    }

    @Test func objectEqualityIgnoresOrder() throws {
        #expect(try json(#"{"a":1,"b":2}"#) == json(#"{"b":2,"a":1}"#))
        #expect(try json(#"{"a":1,"b":2}"#) != json(#"{"a":1,"b":3}"#))
        #expect(try json(#"{"a":1}"#) != json(#"{"a":1,"b":3}"#))
    }

    @Test(arguments: [
        ("", "unexpected end of input at byte 0"),
        ("{} x", "trailing \"x\" after the JSON value at byte 3"),
        ("{}{}", "trailing \"{\" after the JSON value at byte 2"),
        (#"{"a":1,"a":2}"#, "duplicate key \"a\" at byte 7"),
        ("[1,]", "unexpected \"]\" at byte 3"),
        ("{\"a\":1,}", "expected a string key, found \"}\" at byte 7"),
        ("\"a\u{1}b\"", "control character byte 0x01 in a string at byte 2"),
        ("\"a\nb\"", "control character byte 0x0A in a string at byte 2"),
        (#""\ud83d""#, "unpaired surrogate in \\u escape at byte 1"),
        (#""\ude4f""#, "unpaired surrogate in \\u escape at byte 1"),
        (#""\ud83d\u0041""#, "unpaired surrogate in \\u escape at byte 1"),
        (#""\x""#, "invalid escape \"\\x\" at byte 2"),
        (#""\u12G4""#, "expected a hex digit in a \\u escape, found \"G\" at byte 5"),
        ("\"abc", "unterminated string at byte 0"),
        ("01", "leading zero in a number at byte 1"),
        ("1.", "expected a digit after the decimal point, found end of input at byte 2"),
        ("-", "expected a digit, found end of input at byte 1"),
        ("1e", "expected a digit in the exponent, found end of input at byte 2"),
        ("1e999", "number out of range at byte 0"),
        ("tru", "unexpected end of input at byte 3"),
        ("nul1", "unexpected \"1\" (expected \"null\") at byte 3"),
        ("{'a':1}", "expected a string key, found \"'\" at byte 1"),
        ("[1 2]", "expected \",\" or \"]\" in an array, found \"2\" at byte 3"),
        ("\u{FEFF}{}", "byte order mark at byte 0"),
        ("NaN", "unexpected \"N\" at byte 0"),
    ])
    func rejects(text: String, message: String) {
        do {
            _ = try json(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.message == message)
            #expect(error.code == .invalidJSON && error.code.rawValue == "invalid_json")
        }
    }

    @Test func rejectsInvalidUTF8WithOffset() {
        do {
            _ = try JSONValue.parse([0x22, 0x61, 0xC3, 0x28, 0x22])
            Issue.record("accepted invalid UTF-8")
        } catch {
            #expect(error.code == .badEncoding && error.code.rawValue == "bad_encoding")
            #expect(error.offset == 2)
        }
    }

    @Test func limitsNestingTo64() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try json(ok).arrayValue != nil)
        let tooDeep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONParseError.self) { _ = try json(tooDeep) }
        let objects = String(repeating: #"{"a":"#, count: 65) + "1" + String(repeating: "}", count: 65)
        #expect(throws: JSONParseError.self) { _ = try json(objects) }
    }

    @Test(
        arguments: [
            [0x80], [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
            [0xF5, 0x80, 0x80, 0x80], [0xE2, 0x82], [0xFF],
        ] as [[UInt8]])
    func utf8ValidatorRejects(bytes: [UInt8]) {
        #expect(UTF8Validation.firstInvalidOffset([0x41] + bytes) == 1)
    }

    @Test func utf8ValidatorAccepts() {
        let text = "a é € 🙏 \u{10FFFF} \u{D7FF} \u{E000}"
        #expect(UTF8Validation.firstInvalidOffset(Array(text.utf8)) == nil)
    }
}
