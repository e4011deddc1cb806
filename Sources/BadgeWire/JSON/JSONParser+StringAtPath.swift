extension JSONParser {
    /// The string at `path` (object keys from the root) of one complete JSON text, read with every check of
    /// ``parseDocument()`` but without building any other value: what
    /// `try parseDocument()[path[0]]?[path[1]]…?.stringValue` returns, and where it throws, this throws too.
    ///
    /// The sink reads an FCM push's `message.token` this way, rather than building the whole body as a
    /// ``JSONValue`` for one string of it.
    mutating func string(at path: [String]) throws(JSONParseError) -> String? {
        if let bad = UTF8Validation.firstInvalidOffset(in: bytes) {
            throw JSONParseError(code: .badEncoding, message: "invalid UTF-8 at byte \(bad)", offset: bad)
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            throw JSONParseError(message: "byte order mark at byte 0", offset: 0)
        }
        var walk = PathWalk()
        skipWhitespace()
        try walkValue(depth: 0, path: path[...], &walk)
        skipWhitespace()
        if index < bytes.count {
            throw error("trailing \(describe(bytes[index])) after the JSON value")
        }
        return walk.found
    }

    /// What a walk for ``string(at:)`` keeps.
    private struct PathWalk {
        /// The keys read so far of every object being read, the innermost's last.
        var keys: [String] = []
        /// The string at the path, once read.
        var found: String?
    }

    /// Reads past one value. `path`: the keys still to follow when this value is on the path, nil when it is not.
    private mutating func walkValue(
        depth: Int, path: ArraySlice<String>?, _ walk: inout PathWalk
    ) throws(JSONParseError) {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            try walkObject(depth: depth + 1, path: path, &walk)
        case UInt8(ascii: "["):
            try walkArray(depth: depth + 1, &walk)
        case UInt8(ascii: "\""):
            if let path, path.isEmpty {
                walk.found = try parseString()
            } else {
                try skipStrictString()
            }
        default:
            try skipScalar(checkingRange: true)
        }
    }

    private mutating func walkObject(
        depth: Int, path: ArraySlice<String>?, _ walk: inout PathWalk
    ) throws(JSONParseError) {
        guard depth <= Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth) levels") }
        index += 1
        let first = walk.keys.count
        defer { walk.keys.removeSubrange(first...) }
        var manyKeys: Set<String>?
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return }
        while true {
            skipWhitespace()
            let key = try readKey(earlier: walk.keys[first...], &manyKeys)
            if manyKeys == nil {
                walk.keys.append(key)
            }
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { throw expected("\":\" after an object key") }
            skipWhitespace()
            let next = path.flatMap { path in path.first == key ? path.dropFirst() : nil }
            try walkValue(depth: depth, path: next, &walk)
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            if consume(UInt8(ascii: "}")) { return }
            throw expected("\",\" or \"}\" in an object")
        }
    }

    private mutating func walkArray(depth: Int, _ walk: inout PathWalk) throws(JSONParseError) {
        guard depth <= Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth) levels") }
        index += 1
        skipWhitespace()
        if consume(UInt8(ascii: "]")) { return }
        while true {
            skipWhitespace()
            try walkValue(depth: depth, path: nil, &walk)
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            if consume(UInt8(ascii: "]")) { return }
            throw expected("\",\" or \"]\" in an array")
        }
    }

    /// Reads past a string with the checks of ``parseString()``; a string with an escape is read by it.
    private mutating func skipStrictString() throws(JSONParseError) {
        let start = index
        var scan = index + 1
        while scan < bytes.count {
            let byte = bytes[scan]
            if byte == UInt8(ascii: "\"") {
                index = scan + 1
                return
            }
            if byte == UInt8(ascii: "\\") {
                index = start
                _ = try parseString()
                return
            }
            if byte < 0x20 {
                index = scan
                throw error("control character \(describe(byte)) in a string")
            }
            scan += 1
        }
        throw error("unterminated string")
    }
}
