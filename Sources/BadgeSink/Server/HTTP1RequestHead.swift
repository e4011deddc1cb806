import BadgeWire

#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif

/// The head of an HTTP/1.1 request as ``HTTP1PushFastPath`` reads it from the request's bytes: strictly, so that
/// whatever it reads, NIO's HTTP/1 decoder reads alike, and whatever it does not read strictly it leaves to the
/// decoder.
///
/// It reads a request line `METHOD SP /TARGET SP HTTP/1.1` (one of the common methods, a target in origin form) and
/// header lines `name ":" OWS value`, every line ending in CRLF; a name of token characters; a value of visible ASCII,
/// spaces and tabs, neither empty nor ending in a space or tab. The body's length is the `content-length` (digits only), 0 without one. Anything else (another
/// version or method, `transfer-encoding`, `upgrade`, `content-length` twice, any other byte or line) it does not
/// frame: the connection is then left to the decoder for good.
struct HTTP1RequestHead {
    var method: String
    /// The request target as sent (origin form for the requests the fast path takes).
    var target: String
    /// The header lines, names lowercased, the first `host` left out: what Swift HTTP Types' request holds after
    /// NIO's HTTP/1 conversion (its authority comes from that `host`), in order.
    var headers: [(name: String, value: String)]
    /// The body's length in bytes.
    var contentLength: Int

    /// Where a request head ends in a buffer.
    enum End: Equatable {
        /// Just before this offset: the CR LF CR LF that ends the head.
        case at(Int)
        /// Not in the bytes so far.
        case notYet
        /// A line feed without a carriage return before it: not a head read here.
        case bareLineFeed
    }

    /// Where the head at the start of `bytes` ends, searching for its last line feed from `start` (the bytes
    /// before it already searched).
    static func end(in bytes: UnsafeRawBufferPointer, searchingFrom start: Int) -> End {
        guard let base = bytes.baseAddress else { return .notYet }
        var index = start
        while index < bytes.count {
            guard let found = memchr(base + index, Int32(lineFeed), bytes.count - index) else { return .notYet }
            let at = base.distance(to: UnsafeRawPointer(found))
            guard at > 0, bytes[at - 1] == carriageReturn else { return .bareLineFeed }
            if at >= 3, bytes[at - 2] == lineFeed, bytes[at - 3] == carriageReturn {
                return .at(at + 1)
            }
            index = at + 1
        }
        return .notYet
    }

    /// Reads a head that ends exactly at the end of `head` (where ``end(in:searchingFrom:)`` found its end); nil
    /// when it is not a head read strictly as above.
    init?(_ head: UnsafeRawBufferPointer) {
        var reader = Reader(bytes: head)
        guard let method = reader.token(), reader.skip(space), let target = reader.target(), reader.skip(space),
            reader.skip(Self.version), reader.skipLineEnd(), Self.isCommon(method),
            target.utf8.first == UInt8(ascii: "/")
        else { return nil }
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(12)
        var contentLength: Int?
        var skippedHost = false
        while !reader.skipLineEnd() {
            guard let name = reader.lowercasedToken(), reader.skip(colon), let value = reader.value(),
                reader.skipLineEnd()
            else { return nil }
            switch name {
            case "content-length":
                guard contentLength == nil, let length = Self.digits(value) else { return nil }
                contentLength = length
            case "transfer-encoding", "upgrade":
                return nil
            case "host" where !skippedHost:
                skippedHost = true
                continue
            default:
                break
            }
            headers.append((name, value))
        }
        guard reader.offset == head.count else { return nil }
        self.method = method
        self.target = target
        self.headers = headers
        self.contentLength = contentLength ?? 0
    }

    /// `text` as a decimal number of at most 18 digits.
    private static func digits(_ text: String) -> Int? {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= 18 else { return nil }
        var value = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    private static let version = Array("HTTP/1.1".utf8)
    /// Whether `method` is one read here; any other (`CONNECT`, one in lowercase, …) is the decoder's.
    private static func isCommon(_ method: String) -> Bool {
        switch method {
        case "POST", "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH": true
        default: false
        }
    }

    /// Reads a head's parts in order.
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        /// Skips `byte`; false when it is not next.
        mutating func skip(_ byte: UInt8) -> Bool {
            guard self.offset < self.bytes.count, self.bytes[self.offset] == byte else { return false }
            self.offset += 1
            return true
        }

        /// Skips `text`; false when it is not next.
        mutating func skip(_ text: [UInt8]) -> Bool {
            guard self.bytes.count - self.offset >= text.count else { return false }
            for (index, byte) in text.enumerated() where self.bytes[self.offset + index] != byte {
                return false
            }
            self.offset += text.count
            return true
        }

        /// Skips a CRLF; false when it is not next.
        mutating func skipLineEnd() -> Bool {
            guard self.bytes.count - self.offset >= 2, self.bytes[self.offset] == carriageReturn,
                self.bytes[self.offset + 1] == lineFeed
            else { return false }
            self.offset += 2
            return true
        }

        /// One or more token characters.
        mutating func token() -> String? {
            self.scan(while: HTTP1Syntax.isTokenByte).map(self.text)
        }

        /// One or more token characters, lowercased.
        mutating func lowercasedToken() -> String? {
            guard let range = self.scan(while: HTTP1Syntax.isTokenByte) else { return nil }
            return String(unsafeUninitializedCapacity: range.count) { text in
                for (index, byte) in self.bytes[range].enumerated() {
                    text[index] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
                }
                return range.count
            }
        }

        /// One or more visible ASCII characters.
        mutating func target() -> String? {
            self.scan(while: { $0 > space && $0 < 0x7f }).map(self.text)
        }

        /// Optional spaces and tabs, then a value up to the line's end: visible ASCII, spaces and tabs, not empty,
        /// its last character visible.
        mutating func value() -> String? {
            _ = self.scan(while: { $0 == space || $0 == tab })
            guard let range = self.scan(while: { ($0 >= space && $0 < 0x7f) || $0 == tab }),
                self.bytes[range.upperBound - 1] != space, self.bytes[range.upperBound - 1] != tab
            else { return nil }
            return self.text(range)
        }

        /// Reads past the bytes that satisfy `accepted`: their range, nil when there is none.
        private mutating func scan(while accepted: (UInt8) -> Bool) -> Range<Int>? {
            let start = self.offset
            while self.offset < self.bytes.count, accepted(self.bytes[self.offset]) {
                self.offset += 1
            }
            return self.offset > start ? start..<self.offset : nil
        }

        /// The bytes of `range` as text.
        private func text(_ range: Range<Int>) -> String {
            String(decoding: UnsafeRawBufferPointer(rebasing: self.bytes[range]), as: UTF8.self)
        }
    }
}

private let carriageReturn = UInt8(ascii: "\r")
private let lineFeed = UInt8(ascii: "\n")
private let space = UInt8(ascii: " ")
private let tab = UInt8(ascii: "\t")
private let colon = UInt8(ascii: ":")
