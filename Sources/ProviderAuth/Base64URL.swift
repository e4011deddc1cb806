import Foundation

/// Base64url without padding (RFC 4648 §5), as JSON Web Tokens use it.
public enum Base64URL {
    /// Encodes `bytes`.
    public static func encode(_ bytes: some DataProtocol) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Decodes `text`; nil when it is not base64url (trailing padding is accepted but not required).
    public static func decode(_ text: some StringProtocol) -> Data? {
        let unpadded = text.utf8.reversed().drop(while: { $0 == UInt8(ascii: "=") }).reversed()
        var base64: [UInt8] = []
        base64.reserveCapacity(unpadded.count + 3)
        for byte in unpadded {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                base64.append(byte)
            case UInt8(ascii: "-"): base64.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): base64.append(UInt8(ascii: "/"))
            default: return nil
            }
        }
        while base64.count % 4 != 0 { base64.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(base64))
    }
}
