import Foundation

/// A JSON Web Token in compact JWS form (`header.claims.signature`, each part base64url), signed with ES256 or
/// RS256: only what APNs provider tokens and Google OAuth2 assertions need.
public struct CompactJWT: Sendable {
    /// The decoded header JSON.
    public let header: Data
    /// The decoded claims JSON.
    public let claims: Data
    /// The decoded signature.
    public let signature: Data
    /// The bytes the signature covers: the first two parts as sent, with their dot.
    public let signingInput: Data

    /// Splits and decodes a token; throws `malformed_token` when it is not three base64url parts.
    public init(_ token: some StringProtocol) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(parts[0]), let claims = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { throw AuthError(.malformedToken, "not a compact JWS (three base64url parts)") }
        self.header = header
        self.claims = claims
        self.signature = signature
        self.signingInput = Data("\(parts[0]).\(parts[1])".utf8)
    }

    /// Decodes the header or the claims as `type`; throws `malformed_token`.
    public func decode<T: Decodable>(_ type: T.Type, from part: Data) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: part)
        } catch {
            throw AuthError(.malformedToken, "the token's JSON does not hold the expected fields")
        }
    }

    /// The standard header fields.
    public struct Header: Codable, Sendable, Equatable {
        /// `ES256` or `RS256`.
        public var alg: String
        /// The key id (APNs: the .p8 key's id).
        public var kid: String?
        /// `JWT`, when present.
        public var typ: String?

        /// Creates a header.
        public init(alg: String, kid: String? = nil, typ: String? = nil) {
            self.alg = alg
            self.kid = kid
            self.typ = typ
        }
    }

    /// Builds `header.claims.signature`, the signature made by `sign` over the first two parts.
    public static func compose(
        header: some Encodable, claims: some Encodable, sign: (Data) throws -> Data
    ) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let input = Base64URL.encode(try encoder.encode(header)) + "." + Base64URL.encode(try encoder.encode(claims))
        return input + "." + Base64URL.encode(try sign(Data(input.utf8)))
    }
}
