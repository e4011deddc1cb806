import Hummingbird

/// The `Codable` bodies of the inspection API's answers whose bytes the contract leaves free.
enum SinkAnswers {
    /// `{"deleted": N}`, the answer of `DELETE /deliveries` and `DELETE /faults`.
    struct Deleted: ResponseEncodable {
        /// How many deliveries or faults were forgotten.
        let deleted: Int
    }

    /// `{"fault": {...}}`, the answer of `POST /faults`.
    struct AddedFault: ResponseEncodable {
        /// The fault as added.
        let fault: Fault
    }

    /// `{"faults": [...]}`, the answer of `GET /faults`.
    struct Faults: ResponseEncodable {
        /// The active faults in insertion order.
        let faults: [Fault]
    }

    /// `{"access_token": …, "expires_in": …, "token_type": "Bearer"}`, an OAuth2 token answer.
    struct IssuedToken: ResponseEncodable {
        let accessToken: String
        let expiresIn: Int
        let tokenType = "Bearer"

        private enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case expiresIn = "expires_in"
            case tokenType = "token_type"
        }
    }

    /// `{"error": …, "error_description": …}`, an OAuth2 error answer.
    struct TokenError: ResponseEncodable {
        let error: String
        let errorDescription: String

        private enum CodingKeys: String, CodingKey {
            case error
            case errorDescription = "error_description"
        }
    }

    /// `{"error": {"code": …, "message": …}}`, the answer of a ``SinkError``.
    struct Failure: ResponseEncodable {
        struct Detail: Encodable {
            let code: String
            let message: String
        }

        let error: Detail
    }
}
