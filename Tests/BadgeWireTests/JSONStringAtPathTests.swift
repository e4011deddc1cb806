import BadgeSupport
import Testing

@testable import BadgeWire

/// `JSONParser.string(at:)` (how the sink reads an FCM push's `message.token`) against the parser that builds
/// values: the same string, and nil wherever `parseDocument()` refuses the text.
@Suite("JSON string at a path")
struct JSONStringAtPathTests {
    private static let path = ["message", "token"]

    /// What the walk answers.
    private static func walked(_ bytes: [UInt8]) -> String?? {
        bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(bytes: buffer)
            do {
                return .some(try parser.string(at: path))
            } catch {
                return nil
            }
        }
    }

    /// What the parser that builds values answers: nil when it refuses the text, else the string or nil.
    private static func built(_ bytes: [UInt8]) -> String?? {
        guard let root = try? JSONValue.parse(bytes) else { return nil }
        return .some(root["message"]?["token"]?.stringValue)
    }

    @Test(
        "reads the string where the parser that builds values does",
        arguments: [
            (#"{"message":{"token":"abc","apns":{"payload":{"aps":{"badge":3}}}}}"#, "abc"),
            (#" {"validate_only": false, "message": {"data": {"a": "1"}, "token": "t-1_x.y"}} "#, "t-1_x.y"),
            (#"{"message":{"token":"caf\u00e9 \ud83d\ude00"}}"#, "caf\u{E9} \u{1F600}"),
            (#"{"message":{"tok\u0065n":"escaped key"}}"#, "escaped key"),
        ])
    func reads(_ text: String, _ expected: String) {
        #expect(Self.walked(Array(text.utf8)) == .some(expected))
        #expect(Self.built(Array(text.utf8)) == .some(expected))
    }

    @Test(
        "finds no string where there is none",
        arguments: [
            #"{"message":{"token":3}}"#, #"{"message":{}}"#, #"{"token":"top level"}"#, #"[{"message":{"token":"a"}}]"#,
            #"{"message":{"token":{"token":"a"}}}"#, #"{"message":"token"}"#, #""token""#, "null",
            #"{"other":{"message":{"token":"nested elsewhere"}}}"#,
        ])
    func none(_ text: String) {
        #expect(Self.walked(Array(text.utf8)) == .some(nil))
        #expect(Self.built(Array(text.utf8)) == .some(nil))
    }

    @Test(
        "refuses what the parser that builds values refuses",
        arguments: [
            #"{"message":{"token":"a","token":"b"}}"#,
            #"{"message":{"token":"a"},"data":{"k":1,"k":2}}"#,
            #"{"message":{"token":"a"},"data":{"k":1,"\u006b":2}}"#,
            "{\"message\":{\"token\":\"a\"},\"d\":{\"\u{E9}\":1,\"e\u{301}\":2}}",
            #"{"message":{"token":"a"},"x":"\ud800"}"#,
            #"{"message":{"token":"a"},"x":"\udc00\ud800"}"#,
            #"{"message":{"token":"a"},"x":1e400}"#,
            #"{"message":{"token":"a"},"x":-1e400}"#,
            #"{"message":{"token":"a"},"x":01}"#,
            #"{"message":{"token":"a"},"x":"\q"}"#,
            "{\"message\":{\"token\":\"a\"},\"x\":\"tab\there\"}",
            #"{"message":{"token":"a"}} x"#,
            #"{"message":{"token":"a"}"#,
            #"{"message":{"token":"a}}"#,
            #"{"message":{"token":"a"},}"#,
            #"{"message":{"token":"a"},"x":[1,]}"#,
            #"{"message":{"token":"a"},"x":tru}"#,
            "",
        ])
    func refuses(_ text: String) {
        #expect(Self.built(Array(text.utf8)) == nil)
        #expect(Self.walked(Array(text.utf8)) == nil)
    }

    @Test("refuses a byte order mark, invalid UTF-8 and nesting deeper than 64")
    func refusesBytes() {
        let body = Array(#"{"message":{"token":"a"}}"#.utf8)
        for bytes in [[0xEF, 0xBB, 0xBF] + body, Array(body.dropLast(3)) + [0xC3, 0x28] + Array(body.suffix(3))] {
            #expect(Self.built(bytes) == nil)
            #expect(Self.walked(bytes) == nil)
        }
        let deep = String(repeating: "[", count: 63) + String(repeating: "]", count: 63)
        let deeper = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        for (inner, accepted) in [(deep, true), (deeper, false)] {
            let text = Array(#"{"message":{"token":"a"},"x":\#(inner)}"#.utf8)
            #expect((Self.built(text) != nil) == accepted)
            #expect(Self.walked(text) == Self.built(text))
        }
    }

    @Test("checks the keys of objects larger than the scanned limit with a set")
    func manyKeys() {
        let count = JSONParser.scannedKeysLimit * 3
        let members = (0..<count).map { "\"k\($0)\":\($0)" }
        let distinct = Array(#"{"message":{"token":"a"},"d":{\#(members.joined(separator: ","))}}"#.utf8)
        #expect(Self.walked(distinct) == .some("a"))
        for repeated in [1, JSONParser.scannedKeysLimit - 1, count - 1] {
            let again = members + ["\"k\(repeated)\":0"]
            let text = Array(#"{"message":{"token":"a"},"d":{\#(again.joined(separator: ","))}}"#.utf8)
            #expect(Self.built(text) == nil)
            #expect(Self.walked(text) == nil)
        }
    }

    @Test("agrees with the parser that builds values on 20,000 generated texts, mutated")
    func generated() {
        var random = SeededGenerator(seed: 34)
        var refused = 0
        var found = 0
        for round in 0..<20_000 {
            var bytes = Array(Self.document(&random, depth: 0, onPath: true).utf8)
            if round % 2 == 1, !bytes.isEmpty {
                // One byte replaced, inserted or removed: texts that are often refused, sometimes in subtle ways.
                let at = random.next(bytes.count)
                let pieces: [UInt8] = Array(#"{}[]",:\u0123456789eE.-+ tfn"#.utf8) + [0x00, 0xC3, 0xFF]
                switch random.next(3) {
                case 0: bytes[at] = pieces[random.next(pieces.count)]
                case 1: bytes.insert(pieces[random.next(pieces.count)], at: at)
                default: bytes.remove(at: at)
                }
            }
            let expected = Self.built(bytes)
            #expect(Self.walked(bytes) == expected, "\(String(decoding: bytes, as: UTF8.self))")
            // What the walk reads through is well-formed: the sink then skips the well-formed check.
            let read = PushPayloadSummary.readFCMToken(in: bytes)
            #expect(read.isStrictJSON == (expected != nil))
            #expect(read.token == expected ?? nil)
            if read.isStrictJSON {
                #expect(JSONValue.isWellFormed(bytes), "\(String(decoding: bytes, as: UTF8.self))")
            }
            if expected == nil { refused += 1 } else if expected! != nil { found += 1 }
        }
        // The generator reaches every outcome often.
        #expect(refused > 2_000)
        #expect(found > 500)
    }

    /// A random JSON text that often has `message.token`, sometimes duplicate keys, escapes, surrogates, large
    /// numbers and deep nesting.
    private static func document(_ random: inout SeededGenerator, depth: Int, onPath: Bool) -> String {
        let keys = ["message", "token", "data", "apns", "k", "\\u006b", "t\\u006fken", "x"]
        if onPath && depth == 2 && random.next(3) > 0 {
            let tokens = ["\"s\"", "\"\\ud83d\\ude00\"", "\"é\\n\"", "\"t\\u006fken\""]
            return tokens[random.next(tokens.count)]
        }
        if depth > 4 || (!onPath && random.next(3) == 0) {
            if random.next(24) == 0 {
                let refused = ["1e400", "\"\\ud800\"", "-1E+999"]
                return refused[random.next(refused.count)]
            }
            let leaves = [
                "1", "-0", "12345678901234567890", "2.5E-3", "\"s\"", "\"\\ud83d\\ude00\"", "\"é\\n\"", "true",
                "false", "null", "[]", "{}", "-123456789012345678",
            ]
            return leaves[random.next(leaves.count)]
        }
        if random.next(6) == 0 {
            let elements = (0..<random.next(4)).map { _ in document(&random, depth: depth + 1, onPath: false) }
            return "[" + elements.joined(separator: ",") + "]"
        }
        var members: [String] = []
        for _ in 0..<random.next(5) + (onPath ? 1 : 0) {
            let key = onPath && members.isEmpty ? (depth == 0 ? "message" : "token") : keys[random.next(keys.count)]
            let childOnPath = onPath && members.isEmpty
            members.append("\"\(key)\": " + document(&random, depth: depth + 1, onPath: childOnPath))
        }
        members.shuffle(using: &random)
        return "{" + members.joined(separator: ", ") + "}"
    }
}
