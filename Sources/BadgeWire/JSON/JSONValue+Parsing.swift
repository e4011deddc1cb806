extension JSONValue {
    /// Parses one JSON text from UTF-8 bytes (see ``JSONParser`` rules: strict UTF-8, no duplicate keys,
    /// no trailing garbage, nesting at most 64 deep).
    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        try Self.withBuffer(bytes) { buffer throws(JSONParseError) in
            var parser = JSONParser(bytes: buffer)
            return try parser.parseDocument()
        }
    }

    /// Whether `bytes` is one well-formed JSON text in valid UTF-8, checked without building a value.
    ///
    /// Checks the RFC 8259 grammar only, nesting up to ``JSONParser/wellFormedMaxDepth`` levels: unlike
    /// ``parse(_:)`` it lets duplicate keys, unpaired `\u` surrogates and numbers beyond `Double` pass, since a
    /// text that passes is only copied, never read. The sink uses it to embed push bodies as they are.
    public static func isWellFormed<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        Self.withBuffer(bytes) { buffer in
            var parser = JSONParser(bytes: buffer)
            return parser.isWellFormedDocument()
        }
    }

    /// Calls `body` with the bytes in contiguous memory, copying them only when they are not already.
    static func withBuffer<Bytes: Collection<UInt8>, Result, Failure: Error>(
        _ bytes: Bytes,
        _ body: (UnsafeBufferPointer<UInt8>) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let result: Swift.Result<Result, Failure>? = bytes.withContiguousStorageIfAvailable { buffer in
            do throws(Failure) {
                return .success(try body(buffer))
            } catch {
                return .failure(error)
            }
        }
        if let result {
            return try result.get()
        }
        let copy = Array(bytes)
        return try copy.withUnsafeBufferPointer { buffer throws(Failure) in try body(buffer) }
    }

    /// Parses one JSON text from a string.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// `text` as a JSON string literal for one-line messages: escaped, and cut to 64 characters with "…".
    public static func quotedForMessage(_ text: String) -> String {
        let short = text.count > 64 ? String(text.prefix(64)) + "…" : text
        return String(decoding: JSONValue.string(short).serialized(), as: UTF8.self)
    }
}
