import BadgeWire

/// The checks of single fields: identifiers, topics, lengths and timestamps.
extension EventDecoder {
    /// The longest device token accepted (see `readDevice`).
    public static let maxTokenLength = 2048

    /// A byte of an APNs topic (a bundle id): `[A-Za-z0-9.-]`.
    public static func isTopicByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// A byte of an app name (`device.app`): `[A-Za-z0-9._-]`.
    public static func isAppByte(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "_") || isTopicByte(byte)
    }

    static func isIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"),
            UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// `^[A-Za-z0-9._:-]{1,128}$`
    static func checkID(_ value: String, field: String) throws(InvalidEvent) {
        let bytes = value.utf8
        guard !bytes.isEmpty, bytes.count <= 128, bytes.allSatisfy(isIDByte) else {
            throw InvalidEvent.invalid(field, "must be 1-128 chars of [A-Za-z0-9._:-]")
        }
    }

    /// `^[A-Za-z0-9._:@-]{1,128}$`
    static func checkUserID(_ value: String, field: String) throws(InvalidEvent) {
        let bytes = value.utf8
        guard !bytes.isEmpty, bytes.count <= 128, bytes.allSatisfy({ isIDByte($0) || $0 == UInt8(ascii: "@") })
        else {
            throw InvalidEvent.invalid(field, "must be 1-128 chars of [A-Za-z0-9._:@-]")
        }
    }

    /// JSON Schema `maxLength`, which counts Unicode code points.
    static func checkMaxLength(_ value: String, _ limit: Int, field: String) throws(InvalidEvent) {
        let length = value.unicodeScalars.count
        guard length <= limit else {
            throw InvalidEvent.invalid(field, "must be at most \(limit) characters, not \(length)")
        }
    }

    static func readTimestamp(_ value: String, field: String) throws(InvalidEvent) -> Timestamp {
        guard let timestamp = Timestamp.parse(value) else {
            throw InvalidEvent.invalid(field, "is not an RFC 3339 timestamp")
        }
        return timestamp
    }
}
