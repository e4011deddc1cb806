import Crypto
import Foundation

/// RFC 4122 version-5 (SHA-1, name-based) UUIDs: the same namespace and name always give the same UUID.
///
/// SHA-1 is swift-crypto's `Insecure.SHA1` (used to derive ids, not for security) and the text is Foundation's
/// `UUID.uuidString`: uppercase 8-4-4-4-12 hex digits, the form the `apns-id` header has always had.
enum NameBasedUUID {
    /// The namespace of BadgePipe's push ids (`11DD0331-F058-45A1-B047-7999A9B6615E`, chosen once at random).
    static let pushNamespace: [UInt8] = [
        0x11, 0xDD, 0x03, 0x31, 0xF0, 0x58, 0x45, 0xA1, 0xB0, 0x47, 0x79, 0x99, 0xA9, 0xB6, 0x61, 0x5E,
    ]

    /// The version-5 UUID of `name` (UTF-8) in the 16-byte `namespace`, as uppercase canonical text
    /// (8-4-4-4-12 hex digits).
    static func make(namespace: [UInt8], name: String) -> String {
        var hash = Insecure.SHA1()
        hash.update(data: namespace)
        var name = name
        name.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        let digest = hash.finalize()

        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { bytes in
            // The first 16 of the digest's 20 bytes, with the version (5) and the variant (RFC 4122) set.
            digest.withUnsafeBytes { bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(16))) }
            bytes[6] = (bytes[6] & 0x0F) | 0x50
            bytes[8] = (bytes[8] & 0x3F) | 0x80
        }
        return UUID(uuid: uuid).uuidString
    }

    /// The `apns-id` of an alert push: derived from the event id and the token, so a re-send keeps it.
    static func alertID(eventID: String, token: String) -> String {
        make(namespace: pushNamespace, name: "alert|\(eventID)|\(token)")
    }

    /// The `apns-id` of a badge-only push: derived from the user, the badge version and the token.
    static func badgeID(user: String, badgeVersion: Int64, token: String) -> String {
        make(namespace: pushNamespace, name: "badge|\(user)|\(badgeVersion)|\(token)")
    }
}
