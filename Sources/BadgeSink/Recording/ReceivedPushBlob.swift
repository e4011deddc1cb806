/// The compact byte form of one push's headers and body, as stored in the ``ByteArena``.
///
/// Credential headers (`authorization`, `proxy-authorization`) are left out: the sink keeps what it checked of them instead
/// (``RecordedAuthorization``), never their text.
///
/// Layout: header count (UInt16 LE); per header its name length (UInt16 LE), the lowercased name, its value
/// length (UInt32 LE) and the value; then the body bytes as received.
enum ReceivedPushBlob {
    /// The headers that carry a credential, never stored: `authorization` and `proxy-authorization`.

    /// Encodes `headers` (names lowercased, repeated names joined with ", ", credential headers left out)
    /// followed by `body`.
    /// - Returns: the blob and the length of its header part.
    static func encode<Bytes: Collection<UInt8>>(
        headers: [(name: String, value: String)],
        body: Bytes
    ) -> (blob: [UInt8], headersLength: Int) {
        let merged = Self.isMerged(headers) ? headers : Self.merge(headers)
        let count = min(merged.count, Int(UInt16.max))
        var headersLength = 2
        for header in merged.prefix(count) {
            headersLength += 6 + min(header.name.utf8.count, Int(UInt16.max)) + header.value.utf8.count
        }
        var blob: [UInt8] = []
        blob.reserveCapacity(headersLength + body.count)
        Self.append(UInt16(count), to: &blob)
        for header in merged.prefix(count) {
            let name = header.name.utf8.prefix(Int(UInt16.max))
            Self.append(UInt16(name.count), to: &blob)
            Self.append(name, to: &blob)
            Self.append(UInt32(header.value.utf8.count), to: &blob)
            Self.append(header.value.utf8[...], to: &blob)
        }
        if body.withContiguousStorageIfAvailable({ blob.append(contentsOf: $0) }) == nil {
            blob.append(contentsOf: body)
        }
        return (blob, headersLength)
    }

    /// `headers` lowercased, repeated names joined with ", ", credential headers left out.
    private static func merge(_ headers: [(name: String, value: String)]) -> [(name: String, value: String)] {
        var merged: [(name: String, value: String)] = []
        merged.reserveCapacity(headers.count)
        for header in headers {
            let name = Self.lowercased(header.name)
            guard !Self.isCredential(name) else { continue }
            // Names are compared only when their UTF-8 lengths are equal (a native string knows its length).
            let length = name.utf8.count
            if let index = merged.firstIndex(where: { $0.name.utf8.count == length && $0.name == name }) {
                merged[index].value += ", " + header.value
            } else {
                merged.append((name, header.value))
            }
        }
        return merged
    }

    /// Whether ``merge(_:)`` would leave `headers` as they are: no name with a capital letter, none twice, no
    /// credential header (what a push with one header per name brings, checked without building a new list).
    private static func isMerged(_ headers: [(name: String, value: String)]) -> Bool {
        for (index, header) in headers.enumerated() {
            let name = header.name
            let length = name.utf8.count
            if Self.isCredential(name) || Self.hasCapital(name) {
                return false
            }
            for earlier in headers[..<index] where earlier.name.utf8.count == length && earlier.name == name {
                return false
            }
        }
        return true
    }

    /// `authorization` or `proxy-authorization` (lowercase).
    private static func isCredential(_ name: String) -> Bool {
        let length = name.utf8.count
        return (length == 13 && name == "authorization") || (length == 19 && name == "proxy-authorization")
    }

    /// Calls `body` with the name and value bytes of each header in an encoded header part.
    static func forEachHeader(
        in headers: ArraySlice<UInt8>,
        _ body: (_ name: ArraySlice<UInt8>, _ value: ArraySlice<UInt8>) -> Void
    ) {
        var index = headers.startIndex
        guard headers.count >= 2 else { return }
        let count = Int(Self.readUInt16(headers, at: &index))
        for _ in 0..<count {
            let nameLength = Int(Self.readUInt16(headers, at: &index))
            let name = headers[index..<index + nameLength]
            index += nameLength
            let valueLength = Int(Self.readUInt32(headers, at: &index))
            let value = headers[index..<index + valueLength]
            index += valueLength
            body(name, value)
        }
    }

    /// The headers of an encoded header part as a dictionary.
    static func decodeHeaders(_ headers: ArraySlice<UInt8>) -> [String: String] {
        var result: [String: String] = [:]
        Self.forEachHeader(in: headers) { name, value in
            result[String(decoding: name, as: UTF8.self)] = String(decoding: value, as: UTF8.self)
        }
        return result
    }

    private static func lowercased(_ name: String) -> String {
        Self.hasCapital(name) ? name.lowercased() : name
    }

    private static func hasCapital(_ name: String) -> Bool {
        name.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") })
    }

    /// Appends a string's bytes, from its contiguous storage when it has one (a native string does) rather than one
    /// by one.
    private static func append(_ text: Substring.UTF8View, to blob: inout [UInt8]) {
        if text.withContiguousStorageIfAvailable({ blob.append(contentsOf: $0) }) == nil {
            blob.append(contentsOf: text)
        }
    }

    private static func append(_ value: UInt16, to blob: inout [UInt8]) {
        blob.append(UInt8(truncatingIfNeeded: value))
        blob.append(UInt8(truncatingIfNeeded: value >> 8))
    }

    private static func append(_ value: UInt32, to blob: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) {
            blob.append(UInt8(truncatingIfNeeded: value >> UInt32(shift)))
        }
    }

    private static func readUInt16(_ bytes: ArraySlice<UInt8>, at index: inout Int) -> UInt16 {
        let value = UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8
        index += 2
        return value
    }

    private static func readUInt32(_ bytes: ArraySlice<UInt8>, at index: inout Int) -> UInt32 {
        var value: UInt32 = 0
        for offset in 0..<4 {
            value |= UInt32(bytes[index + offset]) << UInt32(offset * 8)
        }
        index += 4
        return value
    }
}
